/** The ONNX domain of the visualisation export's nodes (exportQuantizedOnnx), declared in the model's opset_import. */
export const QTK_VISUAL_DOMAIN = 'qtk';
export const QTK_VISUAL_DOMAIN_VERSION = 1;
