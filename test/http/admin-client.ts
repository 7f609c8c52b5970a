import type { FastifyInstance } from 'fastify'

/** Two operator keys as ADMIN_KEYS gives them (`k1`, `k2`); the secret is what is presented. */
export const secrets = {
  k1: 'op-one-0123456789abcdefghijklmnopqrstuvwxyz',
  k2: 'op-two-0123456789abcdefghijklmnopqrstuvwxyz',
}
export const adminEnv = { ADMIN_KEYS: `k1:${secrets.k1},k2:${secrets.k2}` }

export interface AdminAnswer {
  status: number
  // biome-ignore lint/suspicious/noExplicitAny: the tests read JSON bodies of many shapes
  body: any
  headers: Record<string, string | string[] | number | undefined>
}

/** A request to the admin API; `key` null sends no Authorization header at all. */
export async function admin(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  body?: unknown,
  key: string | null = secrets.k1,
): Promise<AdminAnswer> {
  const headers: Record<string, string> = {}
  if (key !== null) headers.authorization = `Bearer ${key}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await app.inject({
    method,
    url: `/admin/v1${url}`,
    headers,
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  })
  return {
    status: res.statusCode,
    body: res.body === '' ? undefined : res.json(),
    headers: res.headers,
  }
}
