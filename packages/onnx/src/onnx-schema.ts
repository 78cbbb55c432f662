import protobuf from 'protobufjs';

// The subset of onnx.proto (IR version 8) that QTK reads and writes, with the specification's field
// numbers. Fields not listed here are skipped by the decoder (protobuf's unknown-field rule).
const ONNX_PROTO = `
syntax = "proto2";
package onnx;

message AttributeProto {
  enum AttributeType {
    UNDEFINED = 0; FLOAT = 1; INT = 2; STRING = 3; TENSOR = 4; GRAPH = 5; SPARSE_TENSOR = 11; TYPE_PROTO = 13;
    FLOATS = 6; INTS = 7; STRINGS = 8; TENSORS = 9; GRAPHS = 10; SPARSE_TENSORS = 12; TYPE_PROTOS = 14;
  }
  optional string name = 1;
  optional string ref_attr_name = 21;
  optional string doc_string = 13;
  optional AttributeType type = 20;
  optional float f = 2;
  optional int64 i = 3;
  optional bytes s = 4;
  optional TensorProto t = 5;
  optional GraphProto g = 6;
  repeated float floats = 7;
  repeated int64 ints = 8;
  repeated bytes strings = 9;
  repeated TensorProto tensors = 10;
  repeated GraphProto graphs = 11;
}

message ValueInfoProto {
  optional string name = 1;
  optional TypeProto type = 2;
  optional string doc_string = 3;
}

message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  optional string name = 3;
  optional string op_type = 4;
  optional string domain = 7;
  repeated AttributeProto attribute = 5;
  optional string doc_string = 6;
}

message ModelProto {
  optional int64 ir_version = 1;
  repeated OperatorSetIdProto opset_import = 8;
  optional string producer_name = 2;
  optional string producer_version = 3;
  optional string domain = 4;
  optional int64 model_version = 5;
  optional string doc_string = 6;
  optional GraphProto graph = 7;
  repeated StringStringEntryProto metadata_props = 14;
}

message StringStringEntryProto {
  optional string key = 1;
  optional string value = 2;
}

message GraphProto {
  repeated NodeProto node = 1;
  optional string name = 2;
  repeated TensorProto initializer = 5;
  optional string doc_string = 10;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
  repeated ValueInfoProto value_info = 13;
}

message TensorProto {
  repeated int64 dims = 1;
  optional int32 data_type = 2;
  repeated float float_data = 4 [packed = true];
  repeated int32 int32_data = 5 [packed = true];
  repeated bytes string_data = 6;
  repeated int64 int64_data = 7 [packed = true];
  optional string name = 8;
  optional string doc_string = 12;
  optional bytes raw_data = 9;
  repeated StringStringEntryProto external_data = 13;
  optional int32 data_location = 14;
  repeated double double_data = 10 [packed = true];
  repeated uint64 uint64_data = 11 [packed = true];
}

message TensorShapeProto {
  message Dimension {
    oneof value {
      int64 dim_value = 1;
      string dim_param = 2;
    }
    optional string denotation = 3;
  }
  repeated Dimension dim = 1;
}

message TypeProto {
  message Tensor {
    optional int32 elem_type = 1;
    optional TensorShapeProto shape = 2;
  }
  oneof value {
    Tensor tensor_type = 1;
  }
  optional string denotation = 6;
}

message OperatorSetIdProto {
  optional string domain = 1;
  optional int64 version = 2;
}
`;

const root = protobuf.parse(ONNX_PROTO, { keepCase: true }).root;

export const ModelProtoType = root.lookupType('onnx.ModelProto');
export const TensorProtoType = root.lookupType('onnx.TensorProto');

/** TensorProto.DataType values QTK handles. */
export const DataType = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
} as const;

/** ONNX element types by number, for messages (TensorProto.DataType). */
const ONNX_TYPE_NAMES: Readonly<Record<number, string>> = {
  1: 'float',
  2: 'uint8',
  3: 'int8',
  4: 'uint16',
  5: 'int16',
  6: 'int32',
  7: 'int64',
  8: 'string',
  9: 'bool',
  10: 'float16',
  11: 'double',
  12: 'uint32',
  13: 'uint64',
  14: 'complex64',
  15: 'complex128',
  16: 'bfloat16',
  17: 'float8e4m3fn',
  18: 'float8e4m3fnuz',
  19: 'float8e5m2',
  20: 'float8e5m2fnuz',
  21: 'uint4',
  22: 'int4',
  23: 'float4e2m1',
};

/** The ONNX name of element type `dt` ('bfloat16', 'int4', ...), or 'element type <dt>' for one ONNX does not define. */
export function onnxTypeName(dt: number): string {
  return ONNX_TYPE_NAMES[dt] ?? `element type ${dt}`;
}

/** What QTK computes in, for messages about the types it refuses. */
export const COMPUTED_TYPES = 'float, double, float16, bool and 8- to 64-bit integers';

export const AttrType = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, GRAPH: 5, FLOATS: 6, INTS: 7, STRINGS: 8 } as const;

// Plain-object views of the decoded messages (protobufjs `toObject` with longs as numbers, bytes as Uint8Array).
export interface TensorMsg {
  dims?: number[];
  data_type?: number;
  float_data?: number[];
  int32_data?: number[];
  int64_data?: number[];
  double_data?: number[];
  uint64_data?: number[];
  string_data?: Uint8Array[];
  name?: string;
  raw_data?: Uint8Array;
  external_data?: { key?: string; value?: string }[];
  data_location?: number;
}
export interface AttributeMsg {
  name?: string;
  type?: number;
  f?: number;
  i?: number;
  s?: Uint8Array;
  t?: TensorMsg;
  g?: GraphMsg;
  floats?: number[];
  ints?: number[];
  strings?: Uint8Array[];
}
export interface NodeMsg {
  input?: string[];
  output?: string[];
  name?: string;
  op_type?: string;
  domain?: string;
  attribute?: AttributeMsg[];
}
export interface DimMsg {
  dim_value?: number;
  dim_param?: string;
}
export interface ValueInfoMsg {
  name?: string;
  type?: { tensor_type?: { elem_type?: number; shape?: { dim?: DimMsg[] } } };
}
export interface GraphMsg {
  node?: NodeMsg[];
  name?: string;
  initializer?: TensorMsg[];
  input?: ValueInfoMsg[];
  output?: ValueInfoMsg[];
  value_info?: ValueInfoMsg[];
}
export interface ModelMsg {
  ir_version?: number;
  metadata_props?: { key?: string; value?: string }[];
  opset_import?: { domain?: string; version?: number }[];
  producer_name?: string;
  producer_version?: string;
  graph?: GraphMsg;
}

const TO_OBJECT = {
  longs: Number,
  bytes: Uint8Array as unknown as typeof String,
  defaults: false,
  arrays: true,
  oneofs: false,
};

export function decodeModel(bytes: Uint8Array): ModelMsg {
  return ModelProtoType.toObject(ModelProtoType.decode(bytes), TO_OBJECT) as ModelMsg;
}

export function encodeModel(model: ModelMsg): Uint8Array {
  return ModelProtoType.encode(ModelProtoType.fromObject(model)).finish();
}

export function decodeTensor(bytes: Uint8Array): TensorMsg {
  return TensorProtoType.toObject(TensorProtoType.decode(bytes), TO_OBJECT) as TensorMsg;
}
