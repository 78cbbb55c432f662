import { describe, expect, it } from 'vitest';
import { pytorchModulePath } from './pytorch-names.js';

describe('pytorchModulePath (issue 28 §5)', () => {
  it('decodes the scopes of torch.onnx.export into the module path', () => {
    expect(pytorchModulePath('/features/features.7/block/block.0/block.0.0/Conv')).toBe('features.7.block.0.0');
    expect(pytorchModulePath('/layer1/layer1.0/conv1/Conv')).toBe('layer1.0.conv1');
    expect(pytorchModulePath('/features/features.1/block/block.1/fc1/Conv')).toBe('features.1.block.1.fc1');
    expect(pytorchModulePath('/conv1/Conv')).toBe('conv1');
  });

  it('a functional op names the module whose forward ran it', () => {
    expect(pytorchModulePath('/features/features.3/Add')).toBe('features.3');
    expect(pytorchModulePath('/layer1/layer1.0/Add_1')).toBe('layer1.0');
  });

  it('has no path for an op of the model itself or a name in another form', () => {
    expect(pytorchModulePath('/Flatten')).toBeNull();
    expect(pytorchModulePath('Conv_0')).toBeNull();
    expect(pytorchModulePath('conv1')).toBeNull();
    expect(pytorchModulePath('//Conv')).toBeNull();
  });
});
