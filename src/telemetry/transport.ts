import { readFileSync } from 'node:fs'
import { Agent as HttpAgent, request as httpRequest } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import type { Destination } from './config.js'

/** OTEL_EXPORTER_OTLP_CERTIFICATE's authorities, read once at start; the system's without. */
function authorities(certificate: Destination['certificate']): Buffer | undefined {
  if (certificate === undefined) return undefined
  const { file, variable } = certificate
  try {
    return readFileSync(file)
  } catch (err) {
    // `ENOENT: no such file or directory, open '…'`: the reason alone, the file named once.
    const message = String((err as Error).message)
    const reason = /^E[A-Z]+: (.*?)(?:, \w+ '.*')?$/.exec(message)?.[1] ?? message
    throw new Error(`${variable} cannot be read: ${file}: ${reason}`)
  }
}

/** Why an export failed: the receiver's status, or the network's error. */
export class ExportError extends Error {}

/**
 * Sends OTLP export requests to one endpoint over a kept-alive connection (one export is in
 * flight at a time: one socket). A request settles once the receiver answered (a 2xx: sent),
 * failed or timed out: a failure is a rejection, never a throw.
 */
export class Transport {
  private readonly agent: HttpAgent
  private readonly send: typeof httpRequest
  private readonly headers: Record<string, string>

  constructor(
    private readonly to: Destination,
    userAgent: string,
  ) {
    const https = to.url.protocol === 'https:'
    // Idle kept-alive sockets are unref'd by Node's agent: they never hold the process open. One
    // idle for 4 s is closed (the agent's `timeout` ends free sockets only): before a receiver's
    // own idle timeout (Node's 5 s) can close it under a request about to be written.
    const agent = { keepAlive: true, timeout: 4000 }
    this.agent = https
      ? new HttpsAgent({ ...agent, ca: authorities(to.certificate) })
      : new HttpAgent(agent)
    this.send = https ? httpsRequest : httpRequest
    this.headers = { ...to.headers, 'user-agent': userAgent }
  }

  /** Posts `body`; resolves on a 2xx answer, rejects with an ExportError otherwise. */
  post(body: Buffer, contentType: string, timeoutMs = this.to.timeoutMs): Promise<void> {
    return new Promise((resolve, reject) => {
      const headers = {
        ...this.headers,
        'content-type': contentType,
        'content-length': String(body.length),
      }
      let req: ReturnType<typeof httpRequest> | undefined
      // The whole exchange, not the socket's idleness: a receiver trickling bytes times out too.
      const timer = setTimeout(() => fail(`no answer within ${timeoutMs} ms`), timeoutMs)
      timer.unref()
      const fail = (why: string) => {
        clearTimeout(timer)
        req?.destroy()
        reject(new ExportError(why))
      }
      try {
        req = this.send(this.to.url, { method: 'POST', headers, agent: this.agent })
      } catch (err) {
        // A header value Node refuses: as any other failure.
        fail((err as Error).message)
        return
      }
      req.on('error', (err) => fail(err.message))
      req.on('response', (res) => {
        const status = res.statusCode ?? 0
        // Drained so that the socket goes back to the agent; the body (a partial-success
        // message or an error) is not read.
        res.resume()
        res.on('end', () => {
          clearTimeout(timer)
          if (status >= 200 && status < 300) resolve()
          else reject(new ExportError(`answered ${status}`))
        })
        res.on('close', () => {
          if (!res.complete) fail('connection closed during the answer')
        })
      })
      req.end(body)
    })
  }

  close(): void {
    this.agent.destroy()
  }
}
