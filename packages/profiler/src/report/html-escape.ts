// Putting untrusted text (model node names, file names) into an HTML document safely.

/** `text` as HTML character data or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/**
 * `value` as JSON for a `<script type="application/json">` block: every `<`, `>` and `&` is written as a
 * JSON unicode escape, so no string inside can close the block (`</script`) or open a comment (`<!--`);
 * JSON.parse of the block's text gives `value` back unchanged.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}
