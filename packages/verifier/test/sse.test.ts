import { describe, expect, it } from 'vitest'
import { type SseEvent, SseParser } from '../src/sse.js'

function parse(chunks: string[]) {
  const events: SseEvent[] = []
  const retries: number[] = []
  const parser = new SseParser({
    onEvent: (e) => events.push(e),
    onRetry: (ms) => retries.push(ms),
  })
  for (const c of chunks) parser.push(c)
  return { events, retries, parser }
}

describe('SseParser', () => {
  it('reads id, event and data, and remembers the last id', () => {
    const { events, parser } = parse([
      'retry: 1000\n\nid: 7\nevent: token.deleted\ndata: {"target":{"id":"c1"}}\n\n',
    ])
    expect(events).toEqual([{ id: '7', event: 'token.deleted', data: '{"target":{"id":"c1"}}' }])
    expect(parser.lastEventId).toBe('7')
  })

  it('joins data lines with LF and names an event without `event:` a message', () => {
    const { events } = parse(['data: a\ndata:b\ndata\n\n'])
    expect(events).toEqual([{ id: '', event: 'message', data: 'a\nb\n' }])
  })

  it('takes LF, CRLF and CR line ends, a CRLF split across chunks included', () => {
    const { events } = parse(['id: 1\r\ndata: x\r', '\n\r', '\nid: 2\rdata: y\r\r'])
    expect(events.map((e) => [e.id, e.data])).toEqual([
      ['1', 'x'],
      ['2', 'y'],
    ])
  })

  it('puts together lines and fields cut anywhere by the network', () => {
    const text = 'id: 12\nevent: account.disabled\ndata: {"account":"acme"}\n\n'
    for (let cut = 1; cut < text.length; cut++) {
      const { events } = parse([text.slice(0, cut), text.slice(cut)])
      expect(events).toEqual([{ id: '12', event: 'account.disabled', data: '{"account":"acme"}' }])
    }
    const { events } = parse([...text])
    expect(events).toHaveLength(1)
  })

  it('skips comments such as the keep-alive ping, and unknown fields', () => {
    const { events } = parse([': ping\n\n:another\nfoo: bar\ndata: x\n\n'])
    expect(events).toEqual([{ id: '', event: 'message', data: 'x' }])
  })

  it('takes retry only when it is all digits', () => {
    const { retries } = parse(['retry: 1500\nretry: 1s\nretry: -1\nretry:250\n\n'])
    expect(retries).toEqual([1500, 250])
  })

  it('counts the id of an event without data, which is not dispatched', () => {
    const { events, parser } = parse(['id: 5\nevent: nothing\n\n'])
    expect(events).toEqual([])
    expect(parser.lastEventId).toBe('5')
  })

  it('ignores an id holding NUL and keeps the id across events that have none', () => {
    const { events } = parse(['id: 3\ndata: a\n\nid: 4\0x\ndata: b\n\ndata: c\n\n'])
    expect(events.map((e) => e.id)).toEqual(['3', '3', '3'])
  })

  it('drops a leading byte order mark and keeps only one space after the colon', () => {
    const { events } = parse(['\ufeffdata:  two spaces\n\n'])
    expect(events).toEqual([{ id: '', event: 'message', data: ' two spaces' }])
  })

  it('does not dispatch an event left unfinished, and starts clean on resume', () => {
    const { events, parser } = parse(['id: 9\ndata: done\n\nid: 10\ndata: cut off'])
    expect(events).toHaveLength(1)
    parser.resume(parser.lastEventId)
    expect(parser.lastEventId).toBe('9')
    parser.push('data: fresh\n\n')
    expect(events.at(-1)).toEqual({ id: '9', event: 'message', data: 'fresh' })
  })
})
