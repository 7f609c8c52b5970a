import type { AppContext } from '../../context.js'
import { ApiError } from '../../errors.js'
import { isoTime } from '../../time.js'
import type { ParsedToken } from '../../tokens/codec.js'
import type { Validation } from '../../tokens/validator.js'
import { andThen, type HeaderSink, meteredLimit, rateLimit } from '../guard.js'
import type { Valid } from './admission.js'
import { jsonType } from './base.js'

/**
 * The `token` object of retrieve (specification 2.5) as JSON, once per verified token string:
 * what a token says never changes, so the answer is two strings joined. Built field by field
 * from the token's payload (nothing else can reach it); the `Validation` schema documents it.
 */
const bodies = new WeakMap<ParsedToken, string>()
function tokenJson(parsed: ParsedToken) {
  let body = bodies.get(parsed)
  if (body === undefined) {
    body = JSON.stringify(buildBody(parsed))
    bodies.set(parsed, body)
  }
  return body
}

function buildBody(parsed: ParsedToken) {
  if (parsed.usage !== 'tk') {
    const { u, a } = parsed.payload
    return { usage: parsed.usage, user: u, authorization: typeof a === 'string' ? a : undefined }
  }
  const { u, exp, iat, scopes, client } = parsed.payload
  return {
    usage: 'tk',
    user: u,
    expires: isoTime(exp * 1000),
    created: isoTime(iat * 1000),
    scopes,
    client,
  }
}

/**
 * Retrieve's answer to a valid token: counted against its account's limit (the limit's headers
 * go to `sink`), then its body. Shared by the route and the fast path. Metered once: valid, or
 * rate_limited when refused with 429 (see `meteredLimit`).
 */
export function answerValid(ctx: AppContext, validation: Valid, sink: HeaderSink) {
  ctx.metrics.validated(validation)
  const limited = meteredLimit(ctx, sink, validation)
  if (!(limited instanceof Promise)) return validBody(ctx, validation, sink)
  return limited.then(() => validBody(ctx, validation, sink))
}

function validBody(ctx: AppContext, validation: Valid, sink: HeaderSink) {
  ctx.usage.countValidation(validation)
  sink.header('content-type', jsonType)
  return `{"code":"TokenValid","token":${tokenJson(validation.parsed)}}`
}

/**
 * Retrieve's answer to a token that is not valid, or to no token: counted against the caller's
 * address, then the code and what the token says (or 401 when there was no token).
 */
export function answerInvalid(
  ctx: AppContext,
  validation: Exclude<Validation, Valid> | undefined,
  ip: string | undefined,
  sink: HeaderSink,
) {
  if (validation !== undefined) {
    ctx.metrics.validated(validation)
    ctx.usage.countValidation(validation)
  }
  return andThen(rateLimit(ctx, sink, `ip:${ip}`), () => {
    if (validation === undefined) throw new ApiError('accessTokenRequired')
    sink.header('content-type', jsonType)
    if (validation.code === 'TokenMalformed') return '{"code":"TokenMalformed"}'
    return `{"code":"${validation.code}","token":${tokenJson(validation.parsed)}}`
  })
}

/** Retrieve's answer to what a token's validation says, or to no token (`undefined`). */
export const answerRetrieve = (
  ctx: AppContext,
  validation: Validation | undefined,
  ip: string | undefined,
  sink: HeaderSink,
) =>
  validation?.code === 'TokenValid'
    ? answerValid(ctx, validation, sink)
    : answerInvalid(ctx, validation, ip, sink)
