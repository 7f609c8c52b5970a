/**
 * A string as JSON text, exactly as `JSON.stringify` writes it: for the JSON texts written by
 * hand on a create (its rows, its token's document), where V8's serializer, walking each
 * object's properties and copying each string character by character, cost a fifth of the
 * request. Most values need no escape (no quote, backslash, control character or surrogate: a
 * lone one is escaped, pairs are left to JSON.stringify too) and go as they are. A loop rather
 * than a regular expression: for strings this short, the call of a RegExp test costs more.
 */
export function jsonString(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) {
      return JSON.stringify(s)
    }
  }
  return `"${s}"`
}
