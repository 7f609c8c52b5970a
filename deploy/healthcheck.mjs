// The image's HEALTHCHECK: GET /healthz on this container's own listener, plain HTTP behind a
// proxy (TRUST_PROXY set, not 0 or false: a hop count or the proxies' addresses), else HTTPS
// (the certificate is the instance's own, so it is not checked).
// Exit 0 when it answers 200, 1 otherwise; node is all it needs.
import http from 'node:http'
import https from 'node:https'

const plain = !/^(0+|false)?$/.test(process.env.TRUST_PROXY ?? '')
const bound = process.env.HOST ?? '127.0.0.1'
const host = bound === '0.0.0.0' || bound === '::' ? '127.0.0.1' : bound
const request = (plain ? http : https).get({
  host,
  port: Number(process.env.PORT ?? 8443),
  path: '/healthz',
  rejectUnauthorized: false,
  timeout: 2500,
})
request.on('response', (res) => {
  res.resume()
  process.exit(res.statusCode === 200 ? 0 : 1)
})
request.on('timeout', () => request.destroy(new Error('timed out')))
request.on('error', (error) => {
  console.error(`healthcheck: ${error.message}`)
  process.exit(1)
})
