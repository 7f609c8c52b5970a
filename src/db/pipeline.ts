import { performance } from 'node:perf_hooks'
import pg from 'pg'

/** Messages of the extended protocol that end in the client's handlers unless taken over. */
const taken = [
  'errorMessage',
  'readyForQuery',
  'rowDescription',
  'dataRow',
  'portalSuspended',
  'emptyQuery',
  'commandComplete',
  'parseComplete',
  'copyInResponse',
  'copyData',
  'notification',
] as const

interface Sent {
  resolve: () => void
  reject: (err: unknown) => void
  /** The first error PostgreSQL answered for this run (it skips the rest of the run). */
  error?: unknown
  /** The run carried the statement's Parse: if that failed, the next run parses again. */
  parsed: boolean
  /** PostgreSQL answered its Parse (ParseComplete): the statement is prepared. */
  parseOk?: boolean
  at: number
}

/**
 * One prepared statement, pipelined on a connection of its own: the next run is sent while the
 * last is still out, so that PostgreSQL finds it waiting when it is done with the last, rather
 * than a round trip later. node-postgres sends a client's next query only once the last one's
 * ReadyForQuery is in; here each run is a Bind, Execute and Sync of its own (one implicit
 * transaction each: a failing run fails alone, PostgreSQL skipping to its Sync), written to the
 * socket at once, and the answers are matched to runs in order, each run ending at its
 * ReadyForQuery. The connection is opened by node-postgres (authentication, TLS, options) and
 * its query messages are then taken from the client.
 *
 * A run out for longer than `timeoutMs` (checked every second, or every quarter of a shorter
 * timeout) ends the connection: every run out fails, and the next run opens a new one.
 */
export class PipelinedStatement {
  private client: pg.Client | undefined
  private opening: Promise<pg.Client> | undefined
  private prepared = false
  private readonly out: Sent[] = []
  private timer: NodeJS.Timeout | undefined
  /** Called when no run is out any more, while end() waits for that. */
  private drained: (() => void) | undefined
  private ended = false
  private ending: Promise<void> | undefined

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly name: string,
    private readonly text: string,
    private readonly timeoutMs = 5000,
  ) {}

  /** A connection is open (or was, and its end is not seen yet). */
  get connected(): boolean {
    return this.client !== undefined
  }

  /** Runs the statement with these values (text or null); settles when it is committed. */
  run(values: (string | null)[]): Promise<void> {
    if (this.ended) return Promise.reject(new Error('Connection terminated'))
    const client = this.client
    if (client === undefined) return this.open().then(() => this.run(values))
    const connection = connectionOf(client)
    const stream = connection.stream
    if (!stream.writable) {
      // Gone, and its error or end not handled yet: a new connection takes the run.
      this.drop(client, new Error('Connection terminated'))
      return this.run(values)
    }
    return new Promise((resolve, reject) => {
      const parsed = !this.prepared
      this.out.push({ resolve, reject, parsed, at: performance.now() })
      stream.cork()
      if (parsed) {
        connection.parse({ name: this.name, text: this.text, types: [] })
        this.prepared = true
      }
      connection.bind({ statement: this.name, values })
      connection.execute({ portal: '', rows: 0 })
      connection.sync()
      stream.uncork()
      if (this.timer === undefined) this.watch()
    })
  }

  private open(): Promise<pg.Client> {
    if (this.opening !== undefined) return this.opening
    const opening = (async () => {
      const client = new pg.Client(this.config)
      client.on('error', (err) => this.drop(client, err))
      client.on('end', () => this.drop(client, new Error('Connection terminated')))
      await client.connect()
      const connection = connectionOf(client)
      for (const event of taken) connection.removeAllListeners(event)
      // Each listener answers for its own connection alone: a dropped one may still be read
      // from before its socket is gone, and its answers are not the runs of the next.
      const head = () => (this.client === client ? this.out[0] : undefined)
      connection.on('parseComplete', () => {
        const sent = head()
        if (sent !== undefined) sent.parseOk = true
      })
      connection.on('errorMessage', (msg: unknown) => {
        const sent = head()
        if (sent !== undefined && sent.error === undefined) sent.error = msg
      })
      connection.on('readyForQuery', () => {
        if (head() === undefined) return
        const sent = this.out.shift() as Sent
        if (sent.error === undefined) sent.resolve()
        else {
          // A statement PostgreSQL prepared stays prepared when its run fails later (in Bind
          // or Execute, rolled back): it is parsed again only if the Parse itself failed.
          if (sent.parsed && !sent.parseOk) this.prepared = false
          sent.reject(sent.error)
        }
        if (this.out.length === 0) this.drained?.()
      })
      this.client = client
      this.prepared = false
      return client
    })()
    this.opening = opening
    opening.then(
      () => {
        this.opening = undefined
      },
      () => {
        this.opening = undefined
      },
    )
    return opening
  }

  /**
   * Fails every run out and closes the socket at once (not with a Terminate after the runs:
   * PostgreSQL would answer them, on a connection no run is matched on any more). A run that
   * was out may still be committed by PostgreSQL, as one whose answer was lost would be.
   */
  private drop(client: pg.Client, err: unknown) {
    if (this.client !== client) return
    this.client = undefined
    // Whatever ended it (a socket error of any kind), the runs out failed as the database away.
    const failure =
      err instanceof Error && /^(Connection terminated|Query read timeout)/.test(err.message)
        ? err
        : new Error(`Connection terminated: ${err instanceof Error ? err.message : String(err)}`, {
            cause: err,
          })
    for (const sent of this.out.splice(0)) sent.reject(failure)
    this.drained?.()
    connectionOf(client).stream.destroy()
  }

  private watch() {
    this.timer = setInterval(
      () => {
        const head = this.out[0]
        if (head === undefined) {
          clearInterval(this.timer)
          this.timer = undefined
        } else if (performance.now() - head.at > this.timeoutMs && this.client !== undefined) {
          this.drop(this.client, new Error('Query read timeout'))
        }
      },
      Math.min(1000, this.timeoutMs / 4),
    )
    this.timer.unref()
  }

  /** Ends the connection once the runs out are answered (or failed by the timeout). */
  end(): Promise<void> {
    this.ending ??= this.close()
    return this.ending
  }

  private async close(): Promise<void> {
    this.ended = true
    if (this.out.length > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve
      })
    }
    clearInterval(this.timer)
    this.timer = undefined
    const client = this.client ?? (await this.opening?.catch(() => undefined))
    this.client = undefined
    await client?.end()
  }
}

const connectionOf = (client: pg.Client) =>
  (client as unknown as { connection: PgConnection }).connection

interface PgConnection {
  stream: NodeJS.WritableStream & { cork(): void; uncork(): void; destroy(): void }
  parse(query: { name: string; text: string; types: unknown[] }): void
  bind(config: { statement: string; values: (string | null)[] }): void
  execute(config: { portal: string; rows: number }): void
  sync(): void
  on(event: string, listener: (...args: unknown[]) => void): void
  removeAllListeners(event: string): void
}
