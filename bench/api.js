// Helpers of the benchmarks.
import { request } from 'node:https'

/** A call to the server under test over TLS, trusting its certificate: {status, text, body}. */
export function api(base, ca, method, route, body) {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${route}`, { method, ca }, (res) => {
      let text = ''
      res.on('data', (d) => {
        text += d
      })
      res.on('end', () => resolve({ status: res.statusCode, text, body: text && JSON.parse(text) }))
    })
    req.on('error', reject)
    if (body) req.setHeader('content-type', 'application/json')
    req.end(body && JSON.stringify(body))
  })
}

/** Drops a run's own PostgreSQL schema (`DATABASE_SCHEMA` on `DATABASE_URL`). */
export async function dropSchema(env) {
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: env.DATABASE_URL })
  await client.connect()
  await client.query(`drop schema if exists ${env.DATABASE_SCHEMA} cascade`)
  await client.end()
}
