import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { ApiError } from '../../errors.js'
import { type LeakOutcome, maxLeakReports } from '../../tokens/leaks.js'
import { actorOf } from '../actor.js'
import { writeLimits } from '../limit-headers.js'
import { ErrorBody } from '../schemas.js'

const tags = ['leaks']
/** 1,000 reports of tokens, URLs and sources fit well within this. */
const bodyLimit = 4 * 1024 * 1024

/** GitHub's feedback for one token: its hash, never the token itself. */
const feedback = (o: LeakOutcome, type: unknown) => ({
  token_hash: o.tokenHash,
  token_type: typeof type === 'string' ? type.slice(0, 64) : 'tessera_token',
  label: o.live ? 'true_positive' : 'false_positive',
})

const parse = (body: string): unknown => {
  try {
    return JSON.parse(body)
  } catch {
    throw new ApiError('invalidResources', 'the body is not JSON')
  }
}

/**
 * Reports of leaked tokens from outside: GitHub's secret scanning partner programme (signed with
 * GitHub's keys, from LEAK_REPORT_KEYS), and anyone who finds a token, in the shape of GitHub's
 * credential revocation API. Their own context: the raw body is what GitHub signs.
 */
export function leakRoutes(app: FastifyInstance, ctx: AppContext) {
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers()
    scope.addContentTypeParser(
      ['application/json', 'text/plain'],
      { parseAs: 'string', bodyLimit },
      (_request, body, done) => done(null, body),
    )

    githubReportRoute(scope, ctx)
    publicReportRoute(scope, ctx)
  })
}

/** GitHub's reports, signed: answered with GitHub's feedback, the same for a body seen before. */
function githubReportRoute(scope: FastifyInstance, ctx: AppContext) {
  scope.post(
    '/leaks/v1/github',
    {
      schema: {
        operationId: 'reportLeaksFromGithub',
        summary: "Report leaked tokens (GitHub's secret scanning)",
        description:
          "GitHub's secret scanning partner programme: a JSON array of `{token, type, url, " +
          'source}` signed with ECDSA P-256 over the raw body (`Github-Public-Key-Identifier`, ' +
          '`Github-Public-Key-Signature`), checked against LEAK_REPORT_KEYS. Answers at once ' +
          'with one `{token_hash, token_type, label}` per entry: `true_positive` for a live ' +
          'Tessera token (revoked or flagged), else `false_positive`. A bad or missing ' +
          'signature answers 401 and nothing is done; the same body again gets the same answer.',
        tags,
        headers: Type.Object({
          'github-public-key-identifier': Type.Optional(Type.String()),
          'github-public-key-signature': Type.Optional(Type.String()),
        }),
        documentedBody: Type.Array(
          Type.Object({
            token: Type.String(),
            type: Type.Optional(Type.String()),
            url: Type.Optional(Type.String()),
            source: Type.Optional(Type.String()),
          }),
        ),
        response: {
          200: Type.Array(
            Type.Object({
              token_hash: Type.String(),
              token_type: Type.String(),
              label: Type.String(),
            }),
          ),
          401: ErrorBody,
          422: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      const raw = typeof request.body === 'string' ? request.body : ''
      const keyId = request.headers['github-public-key-identifier']
      const signature = request.headers['github-public-key-signature']
      const signed = ctx.leaks.signedByGithub(
        raw,
        typeof keyId === 'string' ? keyId : undefined,
        typeof signature === 'string' ? signature : undefined,
      )
      if (!signed) throw new ApiError('unauthorized')
      const replayed = await ctx.leaks.seen(raw)
      if (replayed !== undefined) return reply.type('application/json').send(replayed)
      const reports = parse(raw)
      if (!Array.isArray(reports) || reports.length > maxLeakReports) {
        throw new ApiError(
          'invalidResources',
          `the body must be an array of at most ${maxLeakReports} reports`,
        )
      }
      const actor = actorOf(request, { type: 'anonymous' })
      const outcomes = await ctx.leaks.report(reports, 'github', actor)
      const answer = JSON.stringify(outcomes.map((o, i) => feedback(o, reports[i]?.type)))
      await ctx.leaks.remember(raw, answer)
      return reply.type('application/json').send(answer)
    },
  )
}

/** Anyone's reports: always 202, rate limited per client address. */
function publicReportRoute(scope: FastifyInstance, ctx: AppContext) {
  scope.post(
    '/leaks/v1/revoke',
    {
      schema: {
        operationId: 'reportLeaks',
        rateLimited: true,
        summary: 'Report leaked tokens (anyone)',
        description:
          'In the shape of GitHub\'s credential revocation API: `{"credentials": [...]}`, at ' +
          'most 1,000 token strings, with where they were found (`url`, optional) and by what ' +
          '(`source`, optional). Always 202 whatever the tokens are (it tells nothing of ' +
          'them). A live sk is revoked (or flagged, by LEAKED_TOKENS); a live pk is only ' +
          'flagged, whatever LEAKED_TOKENS says: a pk is public by design, and nobody vouches ' +
          'for an anonymous report. Rate limited per client address.',
        tags,
        documentedBody: Type.Object({
          credentials: Type.Array(Type.String()),
          url: Type.Optional(Type.String({ description: 'Where they were found' })),
          source: Type.Optional(Type.String({ description: 'What found them' })),
        }),
        response: { 202: Type.Null(), 422: ErrorBody, 429: ErrorBody },
      },
    },
    async (request, reply) => {
      writeLimits(reply, await ctx.checkpoint.anonymous(request.ip, 'leak'))
      const body = parse(typeof request.body === 'string' ? request.body : '') as {
        credentials?: unknown
        url?: unknown
        source?: unknown
      }
      const credentials = body?.credentials
      if (!Array.isArray(credentials) || credentials.length > maxLeakReports) {
        throw new ApiError(
          'invalidResources',
          `credentials must be an array of at most ${maxLeakReports} token strings`,
        )
      }
      const actor = actorOf(request, { type: 'anonymous' })
      // Where it was found, as the reporter says (clipped; shown to the holder as text).
      const { url, source } = body
      await ctx.leaks.report(
        credentials.map((token) => ({ token, url, source })),
        'public',
        actor,
      )
      return reply.code(202).send()
    },
  )
}
