import https from 'node:https'

/**
 * Load through the fleet's proxy for the container suites: each worker keeps one connection of
 * its own (keep-alive) and, until stopped, creates a token and retrieves it, one request at a
 * time. Every request is recorded with when it was sent and answered (performance.now(), ms).
 */

export interface Sent {
  method: 'POST' | 'GET'
  sent: number
  answered: number
  /** The HTTP status, or 0 when the request got no answer (`error` says why). */
  status: number
  error?: string
}

export interface Load {
  /** Every request so far, in the order they were answered. */
  sent: Sent[]
  /** Stops sending, and resolves once every worker's last request is answered. */
  stop: () => Promise<Sent[]>
}

interface Target {
  port: number
  tls: { ca: string; servername: string }
  username: string
  /** A secret token with tokens:write, for the creates. */
  sk: string
}

function send(target: Target, agent: https.Agent, method: Sent['method'], path: string) {
  const sent = performance.now()
  const payload = method === 'POST' ? JSON.stringify({ note: 'load' }) : undefined
  return new Promise<Sent & { body: string }>((resolve) => {
    const done = (status: number, body: string, error?: string) =>
      resolve({ method, sent, answered: performance.now(), status, body, error })
    const req = https.request(
      {
        host: '127.0.0.1',
        port: target.port,
        method,
        path,
        agent,
        ca: target.tls.ca,
        servername: target.tls.servername,
        // Longer than the proxy's lb_try_duration: a request the proxy retries is waited for.
        timeout: 20_000,
        headers: {
          host: `${target.tls.servername}:${target.port}`,
          ...(payload ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          text += chunk
        })
        res.on('end', () => done(res.statusCode ?? 0, text))
        res.on('error', (err) => done(0, text, err.message))
      },
    )
    req.on('timeout', () => req.destroy(new Error('timed out')))
    req.on('error', (err) => done(0, '', err.message))
    req.end(payload)
  })
}

/** `workers` connections, each creating a token and retrieving it in turn until stopped. */
export function startLoad(target: Target, workers: number): Load {
  const sent: Sent[] = []
  let running = true
  const worker = async () => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 })
    const created = `/tokens/v2/${target.username}?access_token=${target.sk}`
    while (running) {
      const { body, ...create } = await send(target, agent, 'POST', created)
      sent.push(create)
      if (create.status !== 200 || !running) continue
      const { token } = JSON.parse(body) as { token: string }
      const { body: _, ...retrieve } = await send(
        target,
        agent,
        'GET',
        `/tokens/v2?access_token=${token}`,
      )
      sent.push(retrieve)
    }
    agent.destroy()
  }
  const all = Array.from({ length: workers }, worker)
  return {
    sent,
    stop: async () => {
      running = false
      await Promise.all(all)
      return sent
    },
  }
}
