/**
 * HTML by tagged template: every interpolated value is escaped unless it is itself `Html` (made
 * by this tag), so text a user typed can only ever be shown as text.
 */
export class Html {
  constructor(readonly text: string) {}
  toString() {
    return this.text
  }
}

const entities: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => entities[c] as string)

type Part = Html | string | number | boolean | null | undefined | readonly Part[]

const render = (value: Part): string => {
  if (value instanceof Html) return value.text
  if (Array.isArray(value)) return value.map(render).join('')
  if (value === null || value === undefined || value === false) return ''
  return escapeHtml(String(value))
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0] ?? ''
  for (let i = 0; i < values.length; i++) out += render(values[i] as Part) + strings[i + 1]
  return new Html(out)
}

/** `attr` when `on`: for boolean attributes such as checked and hidden. */
export const when = (on: boolean, attr: string) => (on ? new Html(` ${attr}`) : '')
