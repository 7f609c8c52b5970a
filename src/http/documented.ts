/**
 * What the OpenAPI document (openapi.ts) says beyond the route schemas: what the API is, the
 * token API's two ways of authentication, and the response headers the operations name.
 */

/** The document's `info.description`: what the API is, for a reader of the whole document. */
export const apiDescription = [
  'Tessera issues and checks access tokens. The token API (tag `tokens`) speaks the wire format',
  'of the Mapbox Tokens API, so its clients and SDKs work unchanged; account holders call it with',
  'their own tokens. The admin API (tag `admin`, under `/admin/v1`) is for the operator, with',
  'operator keys. Every answer is JSON (the event stream aside); an error is `{"message"}`, a',
  'fixed text to match on, with an optional `details` sentence. The token API answers carry the',
  "account's rate limit in `X-Rate-Limit-*` and `RateLimit` headers.",
].join(' ')

/** The token API's two ways to give a token, either of which authenticates a request. */
export const tokenSecurity = [{ accessToken: [] }, { bearerToken: [] }]

export const tokenSecuritySchemes = {
  accessToken: {
    type: 'apiKey',
    in: 'query',
    name: 'access_token',
    description: "A pk, sk or tk token, as the Mapbox Tokens API takes it; each route's scope",
  },
  bearerToken: {
    type: 'http',
    scheme: 'bearer',
    description:
      'The same token as `Authorization: Bearer <token>` (Tessera). With both, they must be the ' +
      'same token: two different ones answer 401 (422 on retrieve)',
  },
}

const integer = { type: 'integer' }
const text = { type: 'string' }

/** The response headers the operations name (`components.headers`). */
export const responseHeaders = {
  'X-Rate-Limit-Interval': {
    description: "The window of the account's `requests` limit, seconds",
    schema: integer,
  },
  'X-Rate-Limit-Limit': {
    description: "The account's `requests` limit: requests in each window",
    schema: integer,
  },
  'X-Rate-Limit-Reset': {
    description: 'When the window ends, epoch seconds',
    schema: integer,
  },
  'RateLimit-Policy': {
    description:
      'The limit closest to refusing (draft-ietf-httpapi-ratelimit-headers): ' +
      '`"<name>";q=<limit>;w=<window seconds>`',
    schema: text,
  },
  RateLimit: {
    description: 'What that limit leaves: `"<name>";r=<remaining>;t=<seconds until its reset>`',
    schema: text,
  },
  'Retry-After': {
    description: 'Seconds until a request may pass',
    schema: integer,
  },
  Link: {
    description: 'The next page, when there is one: `<absolute URL>; rel="next"`',
    schema: text,
  },
  'Verification-Log-Dropped': {
    description:
      'Rows of the verification log (of every account) dropped unwritten in the range asked ' +
      'for, when there were any: the list may lack some',
    schema: integer,
  },
  'WWW-Authenticate': {
    description:
      'The bearer challenge (RFC 6750): `Bearer realm="tokens"` (the token API) or ' +
      '`Bearer realm="admin"`, with `error="invalid_token"` when a token was given and refused ' +
      '(`error="invalid_request"` for two different tokens)',
    schema: text,
  },
}

/** The schema keys of a token API route: its id in the document, its security, its headers. */
export const tokenApi = (operationId: string) => ({
  operationId,
  security: tokenSecurity,
  rateLimited: true,
})
