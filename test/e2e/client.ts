import { readFileSync } from 'node:fs'
import { request } from 'node:https'

export interface Answer {
  status: number
  // biome-ignore lint/suspicious/noExplicitAny: the tests read JSON bodies of many shapes
  body: any
  headers: Record<string, string | string[] | undefined>
  ms: number
}

/** One HTTPS request to a Tessera server that trusts its generated certificate. */
export function api(
  server: { url: string; certFile: string },
  method: string,
  route: string,
  token?: string,
  body?: unknown,
): Promise<Answer> {
  const started = performance.now()
  const url =
    token === undefined
      ? `${server.url}${route}`
      : `${server.url}${route}${route.includes('?') ? '&' : '?'}access_token=${token}`
  return new Promise((resolve, reject) => {
    const req = request(url, { method, ca: readFileSync(server.certFile), agent: false }, (res) => {
      let text = ''
      res.on('data', (d) => {
        text += d
      })
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body: text === '' ? undefined : JSON.parse(text),
          headers: res.headers,
          ms: performance.now() - started,
        }),
      )
    })
    req.setTimeout(15_000, () => req.destroy(new Error(`${method} ${route} timed out`)))
    req.on('error', reject)
    if (body !== undefined) req.setHeader('content-type', 'application/json')
    req.end(body === undefined ? undefined : JSON.stringify(body))
  })
}
