/**
 * What JSON.parse hides, read from the JSON text itself. JSON.parse turns every number into a
 * double, so `10.0000000000000001` arrives as 10 (the money rules need the digits the client
 * actually sent); and it keeps the last of two members with one name, where a proxy or parser in
 * front may have read the first. Linear passes; JSON.parse has already accepted the text, so these
 * only walk structure they know to be well formed.
 */

const QUOTE = 0x22; // "
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

function isWhitespace(code: number): boolean {
  // JSON's four whitespace characters, and a byte-order mark before the value.
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d || code === 0xfeff;
}

function skipWhitespace(text: string, at: number): number {
  while (at < text.length && isWhitespace(text.charCodeAt(at))) at += 1;
  return at;
}

/** Index just past the string literal that starts at `at` (an opening quote). */
function stringEnd(text: string, at: number): number {
  let from = at + 1;
  for (;;) {
    // indexOf runs in native code: a long string value costs next to nothing.
    const quote = text.indexOf('"', from);
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes += 1;
    // An even run of backslashes escapes itself, not the quote.
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** Index just past the value that starts at `at`. */
function valueEnd(text: string, at: number): number {
  const first = text.charCodeAt(at);
  if (first === QUOTE) return stringEnd(text, at);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    let i = at;
    for (;;) {
      const code = text.charCodeAt(i);
      if (code === QUOTE) {
        i = stringEnd(text, i);
        continue;
      }
      if (code === OPEN_BRACE || code === OPEN_BRACKET) depth += 1;
      else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
        depth -= 1;
        if (depth === 0) return i + 1;
      }
      i += 1;
    }
  }
  // A number, true, false or null: runs until a delimiter.
  let i = at;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === COMMA || code === CLOSE_BRACE || code === CLOSE_BRACKET || isWhitespace(code)) break;
    i += 1;
  }
  return i;
}

function memberName(rawKey: string): string {
  // Escapes in a key ("amount\u005fbrl") name the same member as their plain spelling.
  return rawKey.includes('\\') ? (JSON.parse(rawKey) as string) : rawKey.slice(1, -1);
}

/**
 * The first member name that appears twice in one object, at any depth, of `json` (a text
 * JSON.parse has accepted); undefined when every object's names are distinct.
 */
export function repeatedMemberName(json: string): string | undefined {
  // One set of names per open object; arrays push null so that a close pops the right level.
  const open: (Set<string> | null)[] = [];
  let i = 0;
  while (i < json.length) {
    const code = json.charCodeAt(i);
    if (code === QUOTE) {
      const end = stringEnd(json, i);
      const names = open[open.length - 1];
      // A string directly in an object, followed by a colon, is a member name.
      if (names && json.charCodeAt(skipWhitespace(json, end)) === 0x3a) {
        const name = memberName(json.slice(i, end));
        if (names.has(name)) return name;
        names.add(name);
      }
      i = end;
      continue;
    }
    if (code === OPEN_BRACE) open.push(new Set());
    else if (code === OPEN_BRACKET) open.push(null);
    else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) open.pop();
    i += 1;
  }
  return undefined;
}

/**
 * The source text of the member `name` of the top-level object of `json`, a text JSON.parse has
 * accepted; undefined when the top level is not an object or has no such member. With duplicate
 * names the last one wins, as it does for JSON.parse.
 */
export function topLevelMemberSource(json: string, name: string): string | undefined {
  let i = skipWhitespace(json, 0);
  if (json.charCodeAt(i) !== OPEN_BRACE) return undefined;
  i = skipWhitespace(json, i + 1);
  if (json.charCodeAt(i) === CLOSE_BRACE) return undefined;
  let found: string | undefined;
  for (;;) {
    const keyEnd = stringEnd(json, i);
    const key = memberName(json.slice(i, keyEnd));
    const valueStart = skipWhitespace(json, skipWhitespace(json, keyEnd) + 1);
    const end = valueEnd(json, valueStart);
    if (key === name) found = json.slice(valueStart, end);
    i = skipWhitespace(json, end);
    if (json.charCodeAt(i) !== COMMA) return found;
    i = skipWhitespace(json, i + 1);
  }
}
