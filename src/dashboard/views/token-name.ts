import type { TokenView } from '../../tokens/service.js'

/** What a page calls a token: its note, `Default public token`, or its id. */
export const tokenName = (token: TokenView) =>
  token.note !== '' ? token.note : token.default ? 'Default public token' : token.id
