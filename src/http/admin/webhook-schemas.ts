import { Type } from '@sinclair/typebox'
import { resources } from './schemas.js'

/** Schemas of the admin API's webhook routes. */

export const WebhookParams = Type.Object({ id: Type.String() })

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({
      ...resources,
      description:
        'https:// (http:// too with WEBHOOK_ALLOW_PRIVATE=1), at most 2,048 characters, no ' +
        'user name or password; every address its host resolves to must be public',
    }),
    events: Type.Optional(
      Type.Array(Type.String(resources), {
        ...resources,
        description: 'Audit actions to deliver, e.g. token.created,token.deleted; all when empty',
      }),
    ),
  },
  resources,
)

export const WebhookObject = Type.Object({
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String(), { description: 'Empty: every action' }),
  created: Type.String(),
  state: Type.Union([Type.Literal('healthy'), Type.Literal('failing')], {
    description: '`failing` while the attempts at its next event fail',
  }),
})

const WebhookSecretField = Type.String({
  description: 'The HMAC-SHA256 key of `Tessera-Signature` (`whsec_...`, used whole as UTF-8)',
})

export const CreatedWebhook = Type.Object({
  ...WebhookObject.properties,
  secret: WebhookSecretField,
})

export const WebhookSecret = Type.Object({ id: Type.String(), secret: WebhookSecretField })

export const WebhookAttempt = Type.Object({
  at: Type.String(),
  status: Type.Union([Type.Integer(), Type.Null()], {
    description: 'The HTTP status; null when there was no answer',
  }),
  error: Type.Optional(
    Type.String({ description: 'Why it failed: HTTP <status>, a timeout, a connection error' }),
  ),
  durationMs: Type.Integer(),
})

export const WebhookDelivery = Type.Object({
  eventId: Type.String({ description: 'Also sent as Tessera-Event-Id' }),
  seq: Type.Union([Type.Integer(), Type.Null()], {
    description: 'The event stream position; null for a ping',
  }),
  action: Type.String(),
  state: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
  created: Type.String({ description: 'The first attempt' }),
  nextAttempt: Type.Optional(Type.String({ description: 'While pending' })),
  attempts: Type.Array(WebhookAttempt, { description: 'Oldest first' }),
})
