import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main } from '../../src/cli/main.js'
import { tesseraVariables } from '../environment.js'
import { Receiver } from '../http/webhook-receiver.js'

/** `tessera webhook ...`, run in process (the same `main` as bin/tessera.js) on a fresh DATA_DIR. */

const dir = mkdtempSync(path.join(tmpdir(), 'tessera-webhook-cli-'))
let rx: Receiver

beforeAll(async () => {
  rx = await Receiver.start()
})
afterAll(async () => {
  await rx.close()
  rmSync(dir, { recursive: true, force: true })
})

async function tessera(args: string[], env: Record<string, string> = {}) {
  const out: string[] = []
  const err: string[] = []
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out.push(String(chunk))
    return true
  })
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    err.push(String(chunk))
    return true
  })
  // main reads process.env: none of the caller's variables for Tessera, only these.
  for (const name of tesseraVariables) vi.stubEnv(name, undefined)
  vi.stubEnv('DATA_DIR', dir)
  vi.stubEnv('WEBHOOK_ALLOW_PRIVATE', '1')
  vi.stubEnv('WEBHOOK_CA_FILE', rx.caFile)
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value)
  try {
    const code = await main(args)
    const text = out.join('')
    return {
      code,
      json: text === '' ? undefined : JSON.parse(text),
      stdout: text,
      stderr: err.join(''),
    }
  } finally {
    stdout.mockRestore()
    stderr.mockRestore()
    vi.unstubAllEnvs()
  }
}

describe('tessera webhook', () => {
  it('adds, lists, pings, shows deliveries and removes an endpoint', async () => {
    const added = await tessera([
      'webhook',
      'add',
      rx.url(),
      '--events',
      'token.created, token.deleted',
    ])
    expect(added.code).toBe(0)
    expect(added.json).toMatchObject({
      id: expect.stringMatching(/^wh_/),
      url: rx.url(),
      events: ['token.created', 'token.deleted'],
      state: 'healthy',
      secret: expect.stringMatching(/^whsec_/),
    })
    const { id } = added.json

    const list = await tessera(['webhook', 'list'])
    expect(list.json).toEqual([{ ...added.json, secret: undefined }])
    expect(list.json[0]).not.toHaveProperty('secret')

    const ping = await tessera(['webhook', 'ping', id])
    expect(ping.code).toBe(0)
    expect(ping.json).toMatchObject({
      action: 'ping',
      state: 'delivered',
      attempts: [{ status: 200 }],
    })
    expect(rx.received.map((r) => r.event.action)).toEqual(['ping'])

    const deliveries = await tessera(['webhook', 'deliveries', id, '--limit', '10'])
    expect(deliveries.json).toEqual([ping.json])

    expect((await tessera(['webhook', 'remove', id])).json).toEqual({ id, removed: true })
    const again = await tessera(['webhook', 'remove', id])
    expect(again.code).toBe(1)
    expect(again.stderr).toBe(`tessera: Not found: no such webhook: ${id}\n`)
    expect((await tessera(['webhook', 'list'])).json).toEqual([])

    // Both changes are in the audit log, by the command line; the refused removal is not.
    const audit = await tessera(['audit', '--action', 'webhook.created,webhook.deleted'])
    expect(audit.code).toBe(0)
    expect(audit.json).toEqual([
      {
        id: expect.stringMatching(/^[0-9a-f]{13}[0-9a-z]{12}$/),
        at: expect.any(String),
        action: 'webhook.deleted',
        actor: { type: 'cli' },
        target: { type: 'webhook', id },
      },
      {
        id: expect.stringMatching(/^[0-9a-f]{13}[0-9a-z]{12}$/),
        at: added.json.created,
        action: 'webhook.created',
        actor: { type: 'cli' },
        target: { type: 'webhook', id },
        details: { url: rx.url(), events: ['token.created', 'token.deleted'] },
      },
    ])
    expect(audit.stdout).not.toContain(added.json.secret)
  })

  it('refuses a private address without WEBHOOK_ALLOW_PRIVATE, and bad options', async () => {
    const webhookEvents = async () =>
      (await tessera(['audit', '--action', 'webhook.created,webhook.deleted'])).json as {
        action: string
        target: { id: string }
      }[]
    const before = (await webhookEvents()).length
    const refused = await tessera(['webhook', 'add', 'https://10.1.2.3/hook'], {
      WEBHOOK_ALLOW_PRIVATE: '0',
    })
    expect(refused).toMatchObject({
      code: 1,
      stderr: "tessera: resources are invalid: url's host 10.1.2.3 is a private address\n",
    })
    const unknown = await tessera(['webhook', 'add', rx.url(), '--events', 'token.exploded'])
    expect(unknown.stderr).toBe('tessera: resources are invalid: no such event: token.exploded\n')
    const id = (await tessera(['webhook', 'add', rx.url()])).json.id
    const limit = await tessera(['webhook', 'deliveries', id, '--limit', '0'])
    expect(limit.stderr).toBe('tessera: limit must be an integer between 1 and 100\n')
    expect((await tessera(['webhook', 'frobnicate', id])).code).toBe(2)
    // Only the endpoint added made an event.
    const events = await webhookEvents()
    expect(events.length - before).toBe(1)
    expect(events[0]).toMatchObject({ action: 'webhook.created', target: { id } })
  })
})
