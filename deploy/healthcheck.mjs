// The image's HEALTHCHECK: GET /healthz on this container's own listener, plain HTTP with
// TRUST_PROXY=1, else HTTPS (the certificate is the instance's own, so it is not checked).
// Exit 0 when it answers 200, 1 otherwise; node is all it needs.
import http from 'node:http'
import https from 'node:https'

const plain = process.env.TRUST_PROXY === '1' || process.env.TRUST_PROXY === 'true'
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
