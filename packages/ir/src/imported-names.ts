// The names a node had in the file its model was imported from (ONNX node names): the importer records
// them in node.meta, fusion merges those of the nodes it fuses, and they survive cloning, preparation,
// conversion and the model file (node.meta is serialized), so tools can show and accept the names a user
// knows from the exporting framework.

/** The node.meta key of the imported names (a JSON array of strings). */
export const IMPORTED_NAMES = 'importedNames';

/** The names the node had in the imported file, first op first ([] when it has none). */
export function importedNamesOf(node: { readonly meta: Readonly<Record<string, unknown>> }): readonly string[] {
  const names = node.meta[IMPORTED_NAMES];
  return Array.isArray(names) ? names.filter((n): n is string => typeof n === 'string') : [];
}
