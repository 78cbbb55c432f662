// Parameter names of a function from its source text, so placeholders get the names of forward's
// parameters (`x`, `data`) and concreteArgs can be given by name.

export interface ParamInfo {
  /** The parameter's name, or null for a destructuring pattern. */
  name: string | null;
  hasDefault: boolean;
  rest: boolean;
}

/** Splits `text` at top-level commas (outside brackets, braces, parentheses and string literals). */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') quote = c;
    else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

function stripComments(src: string): string {
  return src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
}

/** The parameters of `fn` (a function, method or arrow function), or null when the source cannot be read. */
export function parseParams(fn: (...args: never[]) => unknown): ParamInfo[] | null {
  let src: string;
  try {
    src = stripComments(Function.prototype.toString.call(fn));
  } catch {
    return null;
  }
  if (src.includes('[native code]')) return null;
  let text: string;
  const open = src.indexOf('(');
  const arrow = src.indexOf('=>');
  if (arrow >= 0 && (open < 0 || open > arrow)) {
    // single-parameter arrow function without parentheses: `x => ...`
    text = src.slice(0, arrow).replace(/^async\s+/, '');
  } else {
    if (open < 0) return null;
    let depth = 0;
    let end = -1;
    for (let i = open; i < src.length; i++) {
      const c = src[i];
      if (c === '(') depth++;
      else if (c === ')' && --depth === 0) {
        end = i;
        break;
      }
    }
    if (end < 0) return null;
    text = src.slice(open + 1, end);
  }
  return splitTopLevel(text).map((p) => {
    const rest = p.startsWith('...');
    const body = rest ? p.slice(3).trim() : p;
    const eq = body.indexOf('=');
    const head = (eq >= 0 ? body.slice(0, eq) : body).trim();
    const name = /^[A-Za-z_$][\w$]*$/.test(head) ? head : null;
    return { name, hasDefault: eq >= 0, rest };
  });
}
