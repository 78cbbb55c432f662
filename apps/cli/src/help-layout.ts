// The layout of --help: a two-column list (option or command, then its description) and wrapped prose,
// at most HELP_WIDTH columns, so long names never run into their description.

/** The widest line --help prints. */
export const HELP_WIDTH = 100;

/** `text` wrapped at spaces to lines of at most `width` characters (a longer word stays whole). */
export function wrapText(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines.length ? lines : [''];
}

/**
 * Rows of `name  description`: names padded to `nameWidth` (indented by two), descriptions wrapped
 * under each other; a name too long for its column gets its description on the next line.
 */
export function formatColumns(rows: readonly (readonly [string, string])[], nameWidth: number): string[] {
  const indent = 2;
  const gap = 2;
  const descColumn = indent + nameWidth + gap;
  const pad = ' '.repeat(descColumn);
  const out: string[] = [];
  for (const [name, description] of rows) {
    const wrapped = wrapText(description, HELP_WIDTH - descColumn);
    const head = `${' '.repeat(indent)}${name}`;
    if (name.length > nameWidth) out.push(head, ...wrapped.map((l) => pad + l));
    else out.push(head.padEnd(descColumn) + wrapped[0], ...wrapped.slice(1).map((l) => pad + l));
  }
  return out;
}

/** Paragraphs (separated by blank lines) reflowed to HELP_WIDTH. */
export function formatProse(text: string): string[] {
  return text
    .trim()
    .split(/\n\s*\n/)
    .flatMap((p, i) => [...(i > 0 ? [''] : []), ...wrapText(p, HELP_WIDTH)]);
}
