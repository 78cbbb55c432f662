// Method sugar on Tensor for the core ops. Op families that live in their own files add their
// methods next to their definitions the same way (module augmentation + prototype).
import { backward, type BackwardOptions } from './autograd.js';
import type { DType } from './dtype.js';
import { Tensor } from './tensor.js';
import { add, div, eq, ge, gt, le, lt, maximum, minimum, mul, ne, pow, sub } from './ops/binary.js';
import { matmul } from './ops/matmul.js';
import { mean, sum, sumToShape } from './ops/reduce.js';
import { abs, exp, log, neg, reciprocal, relu, rsqrt, sqrt, toType } from './ops/unary.js';
import { contiguous, expand, permute, reshape, transpose } from './ops/view.js';

type Operand = Tensor | number;

declare module './tensor.js' {
  interface Tensor {
    add(other: Operand): Tensor;
    sub(other: Operand): Tensor;
    mul(other: Operand): Tensor;
    div(other: Operand): Tensor;
    pow(other: Operand): Tensor;
    maximum(other: Operand): Tensor;
    minimum(other: Operand): Tensor;
    eq(other: Operand): Tensor;
    ne(other: Operand): Tensor;
    lt(other: Operand): Tensor;
    le(other: Operand): Tensor;
    gt(other: Operand): Tensor;
    ge(other: Operand): Tensor;
    neg(): Tensor;
    exp(): Tensor;
    log(): Tensor;
    sqrt(): Tensor;
    rsqrt(): Tensor;
    reciprocal(): Tensor;
    abs(): Tensor;
    relu(): Tensor;
    matmul(other: Tensor): Tensor;
    sum(axes?: number | readonly number[], keepdim?: boolean): Tensor;
    mean(axes?: number | readonly number[], keepdim?: boolean): Tensor;
    sumTo(shape: readonly number[]): Tensor;
    reshape(shape: readonly number[]): Tensor;
    view(...shape: number[]): Tensor;
    permute(...perm: number[]): Tensor;
    transpose(dim0?: number, dim1?: number): Tensor;
    expand(shape: readonly number[]): Tensor;
    contiguous(): Tensor;
    toType(dtype: DType): Tensor;
    float(): Tensor;
    backward(gradient?: Tensor, options?: BackwardOptions): void;
  }
}

const P = Tensor.prototype;
P.add = function (o) {
  return add(this, o);
};
P.sub = function (o) {
  return sub(this, o);
};
P.mul = function (o) {
  return mul(this, o);
};
P.div = function (o) {
  return div(this, o);
};
P.pow = function (o) {
  return pow(this, o);
};
P.maximum = function (o) {
  return maximum(this, o);
};
P.minimum = function (o) {
  return minimum(this, o);
};
P.eq = function (o) {
  return eq(this, o);
};
P.ne = function (o) {
  return ne(this, o);
};
P.lt = function (o) {
  return lt(this, o);
};
P.le = function (o) {
  return le(this, o);
};
P.gt = function (o) {
  return gt(this, o);
};
P.ge = function (o) {
  return ge(this, o);
};
P.neg = function () {
  return neg(this);
};
P.exp = function () {
  return exp(this);
};
P.log = function () {
  return log(this);
};
P.sqrt = function () {
  return sqrt(this);
};
P.rsqrt = function () {
  return rsqrt(this);
};
P.reciprocal = function () {
  return reciprocal(this);
};
P.abs = function () {
  return abs(this);
};
P.relu = function () {
  return relu(this);
};
P.matmul = function (o) {
  return matmul(this, o);
};
P.sum = function (axes, keepdim) {
  return sum(this, axes, keepdim);
};
P.mean = function (axes, keepdim) {
  return mean(this, axes, keepdim);
};
P.sumTo = function (shape) {
  return sumToShape(this, shape);
};
P.reshape = function (shape) {
  return reshape(this, shape);
};
P.view = function (...shape) {
  return reshape(this, shape);
};
P.permute = function (...perm) {
  return permute(this, perm);
};
P.transpose = function (d0, d1) {
  return transpose(this, d0, d1);
};
P.expand = function (shape) {
  return expand(this, shape);
};
P.contiguous = function () {
  return contiguous(this);
};
P.toType = function (dtype) {
  return toType(this, dtype);
};
P.float = function () {
  return toType(this, 'float32');
};
P.backward = function (gradient, options) {
  backward(this, gradient, options);
};
