// PyTorch's torch.onnx.export names nodes by the module scopes they ran in: '/layer1/layer1.0/conv1/Conv'.
// Users of the exported model know the module path that encodes ('layer1.0.conv1'), not QTK's sanitized
// node name ('layer1_layer1_0_conv1').

/**
 * The PyTorch module path an ONNX node name from torch.onnx.export encodes, or null when the name is not
 * in that form: '/features/features.7/block/block.0/block.0.0/Conv' → 'features.7.block.0.0'. Each scope
 * is an attribute name, except that a container's child repeats its parent's scope in front ('features.7'
 * inside 'features'); the last part is the op. A functional op names the module whose forward ran it
 * ('/layer1/layer1.0/Add' → 'layer1.0'); an op of the model's own forward ('/Flatten') has no path.
 */
export function pytorchModulePath(onnxName: string): string | null {
  if (!onnxName.startsWith('/')) return null;
  const scopes = onnxName.slice(1).split('/').slice(0, -1);
  if (scopes.length === 0 || scopes.some((s) => s === '')) return null;
  const path: string[] = [];
  let previous = '';
  for (const scope of scopes) {
    if (previous !== '' && scope.startsWith(`${previous}.`)) path[path.length - 1] = scope;
    else path.push(scope);
    previous = scope;
  }
  return path.join('.');
}
