export type MessageListener = (message: unknown) => void

/** What a worker needs of its IPC channel to the primary: `process` in a cluster worker. */
export interface IpcChannel {
  readonly connected: boolean
  /** Optional as on `process`, which has none without an IPC channel. */
  send?(message: unknown): boolean
  on(event: 'message', listener: MessageListener): unknown
  off?(event: 'message', listener: MessageListener): unknown
}

/** A message of the primary's: its kind (`tessera`) and, for an answer, its request's id. */
export type Reply = Record<string, unknown> & { tessera: string; id: number }

const isReply = (m: unknown): m is Reply =>
  typeof m === 'object' &&
  m !== null &&
  typeof (m as Reply).tessera === 'string' &&
  typeof (m as Reply).id === 'number'

/**
 * Beyond this, a request is given up and the worker counts in process. The primary is on the
 * same machine and answers in microseconds: a request this late means the worker's own event
 * loop stalled (a synchronous wait for SQLite's write lock) or the primary is stuck.
 */
export const replyTimeoutMs = 2_000

interface Pending {
  kind: string
  resolve: (reply: Reply) => void
  reject: (err: Error) => void
  timer: NodeJS.Timeout
}

/**
 * A worker's requests to its primary over IPC, each answer matched to its request by kind and
 * id: the primary answers in one synchronous step, so each request is atomic there (rate-limit
 * leases, sign-in attempts).
 */
export class IpcRequests {
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private readonly listener: MessageListener = (m) => this.receive(m)
  /** Called on each answer: the primary is there. */
  answered = () => {}

  constructor(private readonly channel: IpcChannel) {
    channel.on('message', this.listener)
  }

  get ready() {
    return this.channel.connected === true && this.channel.send !== undefined
  }

  /** Sends `{ tessera: kind, id, ...body }` and settles with the answer of that kind and id. */
  ask(kind: string, body: Record<string, unknown>): Promise<Reply> {
    // Sending on a closed channel would emit an 'error' on `process`: refused here instead.
    if (!this.ready) return Promise.reject(new Error('no IPC channel to the primary'))
    const id = this.nextId++
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        // Timers run before the loop reads IPC: after a stall of the worker's own loop, the
        // answer may be waiting in the pipe. It is read first, and wins (receive clears this).
        setImmediate(() => {
          if (this.pending.get(id)?.timer !== timer) return
          // An answer later still is dropped: the primary counted what no one uses, which can
          // only refuse early, never let more than the limit pass.
          this.pending.delete(id)
          reject(new Error(`the primary did not answer (${kind}) within ${replyTimeoutMs} ms`))
        })
      }, replyTimeoutMs)
      timer.unref()
      this.pending.set(id, { kind, resolve, reject, timer })
      this.channel.send?.({ tessera: kind, id, ...body })
    })
  }

  /** A message that needs no answer: false when there is no channel to send it on. */
  tell(message: { tessera: string; [field: string]: unknown }): boolean {
    if (!this.ready) return false
    this.channel.send?.(message)
    return true
  }

  private receive(m: unknown) {
    if (!isReply(m)) return
    const pending = this.pending.get(m.id)
    if (pending === undefined || pending.kind !== m.tessera) return
    this.pending.delete(m.id)
    clearTimeout(pending.timer)
    this.answered()
    pending.resolve(m)
  }

  async close() {
    this.channel.off?.('message', this.listener)
    for (const p of this.pending.values()) {
      clearTimeout(p.timer)
      p.reject(new Error('closed'))
    }
    this.pending.clear()
  }
}
