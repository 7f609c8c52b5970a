import { Type } from '@sinclair/typebox'
import { outcomes } from '../../usage/outcomes.js'
import { sources } from '../../verification/log.js'
import { PageQuery, resources } from './schemas.js'

/** Schemas of the admin API's verification log (docs/api.md#the-verification-log). */

const Time = (description: string) => Type.String({ ...resources, description })

export const VerificationsQuery = Type.Object({
  from: Type.Optional(
    Time(
      'The first instant (inclusive), an ISO 8601 date or timestamp; a day before `to` if absent',
    ),
  ),
  to: Type.Optional(Time('The end (exclusive), an ISO 8601 date or timestamp; now if absent')),
  token: Type.Optional(
    Type.String({
      ...resources,
      pattern: '^c[a-z0-9]{24}$',
      description: "One token's rows, by its id",
    }),
  ),
  outcome: Type.Optional(
    Type.String({
      ...resources,
      maxLength: 512,
      description: `Comma-separated outcomes: ${outcomes.join(', ')}`,
    }),
  ),
  source: Type.Optional(
    Type.String({
      ...resources,
      maxLength: 256,
      description: `Comma-separated sources: ${sources.join(', ')}`,
    }),
  ),
  ...PageQuery.properties,
})

export const VerificationObject = Type.Object({
  id: Type.String({ description: "The row's id: with `at`, the order of the list" }),
  at: Type.String({ description: 'When it was decided (ISO 8601, milliseconds)' }),
  token: Type.Union([Type.String(), Type.Null()], {
    description: 'The token id; null when the string named none (malformed, temporary, unknown)',
  }),
  source: Type.String({ description: `Where it happened: ${sources.join(', ')}` }),
  outcome: Type.String({ description: `What it came to: ${outcomes.join(', ')}` }),
  limit: Type.Optional(
    Type.String({ description: 'rate_limited: the name of the limit that refused it' }),
  ),
  ip: Type.Optional(Type.String({ description: "The client's address" })),
  origin: Type.Optional(
    Type.String({
      description: 'The host of the Origin (else Referer) header, where one was sent',
    }),
  ),
  request_id: Type.Optional(Type.String()),
  duration_us: Type.Optional(
    Type.Integer({ description: 'From the request to the decision, in microseconds' }),
  ),
  reason: Type.String({ description: 'Why, in words (`Valid` for a valid one)' }),
})
