// The public functional ops behind the trace check (see trace-hook.ts), each under a stable name:
// the export name, which is also the `target` of the call_function nodes tracing records.
import { traceable } from './trace-hook.js';
import * as binary from './ops/binary.js';
import * as unary from './ops/unary.js';
import * as reduce from './ops/reduce.js';
import * as view from './ops/view.js';
import * as mm from './ops/matmul.js';
import * as creation from './creation.js';
import * as conv from './ops/conv.js';
import * as convT from './ops/conv-transpose.js';
import * as act from './ops/activations.js';
import * as whereOp from './ops/where.js';
import * as sm from './ops/softmax.js';
import * as ce from './ops/cross-entropy.js';
import * as rx from './ops/reduce-extra.js';
import * as shapeOps from './ops/shape-ops.js';
import * as pool from './ops/pool.js';
import * as interp from './ops/interpolate.js';
import * as padOp from './ops/pad.js';
import * as bn from './ops/batch-norm.js';
import * as ln from './ops/layer-norm.js';
import * as mf from './ops/math-functions.js';

export const add = traceable('add', binary.add);
export const sub = traceable('sub', binary.sub);
export const mul = traceable('mul', binary.mul);
export const div = traceable('div', binary.div);
export const pow = traceable('pow', binary.pow);
export const maximum = traceable('maximum', binary.maximum);
export const minimum = traceable('minimum', binary.minimum);
export const eq = traceable('eq', binary.eq);
export const ne = traceable('ne', binary.ne);
export const lt = traceable('lt', binary.lt);
export const le = traceable('le', binary.le);
export const gt = traceable('gt', binary.gt);
export const ge = traceable('ge', binary.ge);

export const neg = traceable('neg', unary.neg);
export const exp = traceable('exp', unary.exp);
export const log = traceable('log', unary.log);
export const sqrt = traceable('sqrt', unary.sqrt);
export const rsqrt = traceable('rsqrt', unary.rsqrt);
export const reciprocal = traceable('reciprocal', unary.reciprocal);
export const abs = traceable('abs', unary.abs);
export const relu = traceable('relu', unary.relu);
export const toType = traceable('toType', unary.toType);

export const sum = traceable('sum', reduce.sum);
export const mean = traceable('mean', reduce.mean);
export const sumToShape = traceable('sumToShape', reduce.sumToShape);

export const reshape = traceable('reshape', view.reshape);
export const permute = traceable('permute', view.permute);
export const transpose = traceable('transpose', view.transpose);
export const expand = traceable('expand', view.expand);
export const contiguous = traceable('contiguous', view.contiguous);

export const matmul = traceable('matmul', mm.matmul);
export const linear = traceable('linear', mm.linear);

export const tensor = traceable('tensor', creation.tensor);
export const scalar = traceable('scalar', creation.scalar);
export const full = traceable('full', creation.full);
export const zeros = traceable('zeros', creation.zeros);
export const ones = traceable('ones', creation.ones);
export const zerosLike = traceable('zerosLike', creation.zerosLike);
export const onesLike = traceable('onesLike', creation.onesLike);
export const arange = traceable('arange', creation.arange);
export const rand = traceable('rand', creation.rand, { impure: true });
export const randn = traceable('randn', creation.randn, { impure: true });
export const randint = traceable('randint', creation.randint, { impure: true });

export const conv1d = traceable('conv1d', conv.conv1d);
export const conv2d = traceable('conv2d', conv.conv2d);
export const conv3d = traceable('conv3d', conv.conv3d);
export const convTranspose1d = traceable('convTranspose1d', convT.convTranspose1d);
export const convTranspose2d = traceable('convTranspose2d', convT.convTranspose2d);

export const clamp = traceable('clamp', act.clamp);
export const relu6 = traceable('relu6', act.relu6);
export const leakyRelu = traceable('leakyRelu', act.leakyRelu);
export const prelu = traceable('prelu', act.prelu);
export const elu = traceable('elu', act.elu);
export const selu = traceable('selu', act.selu);
export const sigmoid = traceable('sigmoid', act.sigmoid);
export const tanh = traceable('tanh', act.tanh);
export const silu = traceable('silu', act.silu);
export const gelu = traceable('gelu', act.gelu);
export const hardsigmoid = traceable('hardsigmoid', act.hardsigmoid);
export const hardswish = traceable('hardswish', act.hardswish);
export const softplus = traceable('softplus', act.softplus);
export const round = traceable('round', act.round);
export const floor = traceable('floor', act.floor);
export const sign = traceable('sign', act.sign);

export const where = traceable('where', whereOp.where);
export const softmax = traceable('softmax', sm.softmax);
export const logSoftmax = traceable('logSoftmax', sm.logSoftmax);
export const crossEntropy = traceable('crossEntropy', ce.crossEntropy);
export const mseLoss = traceable('mseLoss', ce.mseLoss);
export const l1Loss = traceable('l1Loss', ce.l1Loss);
export const max = traceable('max', rx.max);
export const min = traceable('min', rx.min);
export const argmax = traceable('argmax', rx.argmax);
export const argmin = traceable('argmin', rx.argmin);

export const cat = traceable('cat', shapeOps.cat);
export const split = traceable('split', shapeOps.split);
export const slice = traceable('slice', shapeOps.slice);
export const flatten = traceable('flatten', shapeOps.flatten);
export const squeeze = traceable('squeeze', shapeOps.squeeze);
export const unsqueeze = traceable('unsqueeze', shapeOps.unsqueeze);

export const maxPool2d = traceable('maxPool2d', pool.maxPool2d);
export const avgPool2d = traceable('avgPool2d', pool.avgPool2d);
export const adaptiveAvgPool2d = traceable('adaptiveAvgPool2d', pool.adaptiveAvgPool2d);
export const interpolate = traceable('interpolate', interp.interpolate);
export const pad = traceable('pad', padOp.pad);
export const batchNorm = traceable('batchNorm', bn.batchNorm);
export const layerNorm = traceable('layerNorm', ln.layerNorm);
import * as resizeOp from './ops/resize.js';
export const resize = traceable('resize', resizeOp.resize);
import * as color from './ops/color-space.js';
export const rgb2CenteredYuv = traceable('rgb2CenteredYuv', color.rgb2CenteredYuv);
export const bgr2CenteredYuv = traceable('bgr2CenteredYuv', color.bgr2CenteredYuv);
export const centeredYuv2Rgb = traceable('centeredYuv2Rgb', color.centeredYuv2Rgb);
export const centeredYuv2Bgr = traceable('centeredYuv2Bgr', color.centeredYuv2Bgr);

export const erf = traceable('erf', mf.erf);
export const sin = traceable('sin', mf.sin);
export const cos = traceable('cos', mf.cos);
export const ceil = traceable('ceil', mf.ceil);
export const logicalNot = traceable('logicalNot', mf.logicalNot);
export const logicalAnd = traceable('logicalAnd', mf.logicalAnd);
export const logicalOr = traceable('logicalOr', mf.logicalOr);
export const logicalXor = traceable('logicalXor', mf.logicalXor);
