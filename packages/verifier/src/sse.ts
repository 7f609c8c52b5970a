/** One dispatched Server-Sent Event. */
export interface SseEvent {
  /** The stream's last event id when this event was dispatched ('' if none yet). */
  id: string
  /** `event:` field; 'message' when absent. */
  event: string
  data: string
}

export interface SseHandlers {
  onEvent(event: SseEvent): void
  /** A valid `retry:` field: the reconnection delay the server asks for, in ms. */
  onRetry?(ms: number): void
}

/**
 * An incremental parser for `text/event-stream`, as the HTML standard's EventSource reads it:
 * lines end in CRLF, LF or CR (a CRLF may be split across chunks), `:` starts a comment, a
 * blank line dispatches, `data` lines join with LF, an event without data is not dispatched
 * but its `id` still counts, an `id` containing NUL is ignored, `retry` takes digits only.
 */
export class SseParser {
  /** Sent back as Last-Event-ID on reconnection. */
  lastEventId = ''
  private buffer = ''
  private skipLf = false
  private started = false
  private data: string[] = []
  private event = ''
  private idBuffer = ''

  constructor(private readonly handlers: SseHandlers) {}

  /** Resumes after `id` (a reconnection starts with no partial event). */
  resume(id: string): void {
    this.lastEventId = id
    this.idBuffer = id
    this.buffer = ''
    this.skipLf = false
    this.started = false
    this.data = []
    this.event = ''
  }

  /** Takes decoded text; the caller decodes UTF-8 across chunk boundaries. */
  push(chunk: string): void {
    let text = chunk
    if (!this.started && text.length > 0) {
      this.started = true
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    if (this.skipLf && text.charCodeAt(0) === 10) text = text.slice(1)
    this.skipLf = false
    let start = 0
    let line = this.buffer
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (c !== 10 && c !== 13) continue
      line += text.slice(start, i)
      this.line(line)
      line = ''
      if (c === 13) {
        if (i + 1 === text.length) this.skipLf = true
        else if (text.charCodeAt(i + 1) === 10) i++
      }
      start = i + 1
    }
    this.buffer = line + text.slice(start)
  }

  private line(line: string): void {
    if (line === '') {
      this.dispatch()
      return
    }
    if (line.charCodeAt(0) === 58) return // ':' comment, e.g. `: ping`
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    switch (field) {
      case 'event':
        this.event = value
        break
      case 'data':
        this.data.push(value)
        break
      case 'id':
        if (!value.includes('\0')) this.idBuffer = value
        break
      case 'retry':
        if (/^\d+$/.test(value)) this.handlers.onRetry?.(Number(value))
        break
    }
  }

  private dispatch(): void {
    this.lastEventId = this.idBuffer
    const data = this.data
    const event = this.event
    this.data = []
    this.event = ''
    if (data.length === 0) return
    this.handlers.onEvent({
      id: this.lastEventId,
      event: event || 'message',
      data: data.join('\n'),
    })
  }
}
