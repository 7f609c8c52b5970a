import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { memberCommand } from '../../src/cli/members.js'
import type { Mailer } from '../../src/mail/mailer.js'
import type { TokenWarning } from '../../src/mail/messages.js'
import { mailWarning } from '../../src/mail/warnings.js'
import { dialect } from '../dialect.js'
import { type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from '../http/admin-client.js'
import { DashboardClient, origin, signedInHolder, titleOf } from '../http/dashboard-client.js'
import { startSmtp } from './smtp.js'

/**
 * Mail as Tessera sends it, to a real SMTP server the test starts on loopback: an invitation
 * made through the admin API reaches the invitee and its link works once; a token warning
 * reaches the account's owners who have an address and links to the token's page.
 */

const password = 'correct horse battery staple'
const day = 86_400_000
const notMailed =
  'This invitation was not mailed: this account or this address has reached its limit of invitation mails for 24 hours. Pass the link on yourself.'
const mailedTo = 'An invitation mail with this link is on its way to'
const footer = '\n-- \nSent by Tessera. This address does not read replies.\n'

describe('mail through a real SMTP server', () => {
  let smtp: Awaited<ReturnType<typeof startSmtp>>
  let h: Harness
  let mailer: Mailer

  beforeEach(async () => {
    smtp = await startSmtp()
    h = await harness({
      ...adminEnv,
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      PUBLIC_URL: origin,
    })
    mailer = h.ctx.mailer as Mailer
  })
  afterEach(async () => {
    await h.close()
    await smtp.close()
  })

  /** An invitation by the operator; answers the admin API's link and the mail it sent. */
  const invite = async (email: string, role: string) => {
    const res = await admin(h.app, 'POST', '/accounts/alice/members', { email, role })
    expect(res.status).toBe(201)
    expect(res.body.mailed).toBe(true)
    await mailer.idle()
    return { url: res.body.invitationUrl as string, mail: smtp.received.at(-1) }
  }

  /** A new person accepts the link in their browser: signed in to alice afterwards. */
  const accept = async (url: string, login: string) => {
    const browser = new DashboardClient(h.app)
    const path = new URL(url).pathname
    const joined = await browser.post(path, { login, password, confirm: password })
    expect(joined.status).toBe(303)
    return browser
  }

  it('mails an invitation to the invitee, and the link in it works once', async () => {
    const { url, mail } = await invite('Dana@Example.com', 'developer')
    expect(url).toMatch(/^https:\/\/tessera\.test\/account\/invitations\/[A-Za-z0-9_-]{43}$/)
    expect(smtp.received).toHaveLength(1)
    expect(mail?.mailFrom).toBe('tessera@tessera.test')
    expect(mail?.rcptTo).toEqual(['dana@example.com'])
    expect(mail?.headers.get('from')).toBe('Tessera <tessera@tessera.test>')
    expect(mail?.headers.get('to')).toBe('dana@example.com')
    expect(mail?.headers.get('subject')).toBe('Invitation to alice on Tessera')
    expect(mail?.headers.get('auto-submitted')).toBe('auto-generated')
    expect(mail?.text).toBe(
      [
        'You are invited to join the account alice on Tessera as developer.',
        '',
        'To accept, open this link and sign in, or choose a username and password:',
        '',
        url,
        '',
        'The link works once and until 2026-11-29 12:00 UTC. Anyone who has it can use it:',
        'do not forward this mail. If you did not expect it, ignore it: nothing happens',
        'unless the link is opened and accepted.',
      ].join('\n') + footer,
    )
    const path = new URL(url).pathname
    const page = await new DashboardClient(h.app).get(path)
    expect(page.status).toBe(200)
    expect(page.body).toContain('alice')
    const dana = await accept(url, 'dana')
    expect((await dana.get('/account')).status).toBe(200)
    const again = await new DashboardClient(h.app).get(path)
    expect([again.status, titleOf(again.body)]).toEqual([410, 'Link no longer valid'])
    expect(mailer.counts).toEqual({ sent: 1, failed: 0, held: 0 })
  })

  it('names the inviter who is a member, and the link stops working when it expires', async () => {
    const owner = new DashboardClient(h.app)
    const setup = await h.ctx.holders.invite('alice', cliActor)
    await owner.post(`/account/setup/${setup}`, { password, confirm: password })
    await owner.get('/account')
    const made = await owner.post('/account/members/invite', {
      email: 'vic@example.com',
      role: 'viewer',
    })
    expect(made.status).toBe(200)
    await mailer.idle()
    const mail = smtp.received.at(-1)
    expect(mail?.rcptTo).toEqual(['vic@example.com'])
    const lines = mail?.text.split('\n') ?? []
    expect(lines[0]).toBe('alice has invited you to join the account alice on Tessera as viewer.')
    // The link the dashboard shows the owner is the one mailed.
    expect(made.body).toContain(lines[4])
    h.clock.now = T0 + 7 * day + 1
    const path = new URL(lines[4] as string).pathname
    expect((await new DashboardClient(h.app).get(path)).status).toBe(410)
  })

  it("mails an expiring token's warnings to the owners with an address, linking to its page", async () => {
    const owen = await accept((await invite('owen@example.com', 'owner')).url, 'owen')
    await accept((await invite('Olga@example.com', 'owner')).url, 'olga')
    await accept((await invite('dev@example.com', 'developer')).url, 'dev')
    const account = await h.ctx.accounts.get('alice')
    const expiresAt = '2026-11-27T18:30:00.000Z'
    const made = await h.ctx.tokens.create(
      account,
      h.ctx.accounts.holder(account),
      { scopes: ['styles:read'], note: 'CI deploy', expiresAt },
      cliActor,
    )
    const invitations = smtp.received.length
    // The sweep every instance runs: the 7-day warning now, the 1-day one later, each once.
    expect(await h.ctx.hygiene.sweep()).toBe(1)
    expect(await h.ctx.hygiene.sweep()).toBe(0)
    await mailer.idle()
    const link = `https://tessera.test/account/tokens/${made.id}`
    const text = `${[
      `Token ${made.id} of the account alice`,
      'expires at 2026-11-27 18:30 UTC. From then on every request with it is refused (TokenExpired).',
      'Extend its end where the account policy allows, or create a new token and move',
      'to it (a roll keeps the end), or delete it if it is no longer needed:',
      '',
      link,
      '',
      'Its note, as written in the account: "CI deploy"',
      '',
      'You receive this as an owner of alice.',
    ].join('\n')}${footer}`
    const warnings = () =>
      smtp.received.slice(invitations).map((m) => ({
        rcptTo: m.rcptTo,
        to: m.headers.get('to'),
        subject: m.headers.get('subject'),
        text: m.text,
      }))
    const owners = ['olga@example.com', 'owen@example.com']
    const to = 'olga@example.com, owen@example.com'
    const first = {
      rcptTo: owners,
      to,
      subject: `Tessera: token ${made.id} of alice expires within 7 days`,
      text,
    }
    expect(warnings()).toEqual([first])
    // The link leads an owner signed in to the token's page.
    const page = await owen.get(new URL(link).pathname)
    expect(page.status).toBe(200)
    expect(page.body).toContain('CI deploy')
    h.clock.now = Date.parse(expiresAt) - 23 * 3_600_000
    expect(await h.ctx.hygiene.sweep()).toBe(1)
    await mailer.idle()
    expect(warnings()).toEqual([
      first,
      {
        ...first,
        subject: `Tessera: token ${made.id} of alice expires within a day`,
        text,
      },
    ])
    expect(JSON.stringify(smtp.received)).not.toContain(made.token as string)
  })

  it('sends no warning where no owner has an address', async () => {
    const { token: _, ...view } = h.alice.defaultToken
    const w: TokenWarning = { kind: 'retiring', account: 'alice', token: view, at: isoIn(1) }
    await mailWarning(mailer, h.ctx.db, w)
    expect(smtp.received).toEqual([])
    expect(mailer.counts).toEqual({ sent: 0, failed: 0, held: 0 })
  })

  it('30 invitations at once to 30 outside addresses mail 20; the other 10 are made and shown, not mailed', async () => {
    const owner = await signedInHolder(h.app, h.ctx, 'alice', password)
    const pages = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        owner.post('/account/members/invite', {
          email: `guest${i}@outside.example`,
          role: 'viewer',
        }),
      ),
    )
    await mailer.idle()
    expect(smtp.received).toHaveLength(20)
    expect(pages.map((p) => p.status)).toEqual(Array(30).fill(200))
    // Every page shows its link, and says whether it was mailed.
    const links = pages.map((p) => /\/account\/invitations\/[A-Za-z0-9_-]{43}/.exec(p.body)?.[0])
    expect(new Set(links).size).toBe(30)
    const said = pages.map((p) =>
      p.body.includes(notMailed) ? 'held' : p.body.includes(mailedTo) ? 'mailed' : 'silent',
    )
    expect(said.filter((s) => s === 'mailed')).toHaveLength(20)
    expect(said.filter((s) => s === 'held')).toHaveLength(10)
    const mailed = new Set(smtp.received.flatMap((m) => m.rcptTo))
    pages.forEach((_, i) => {
      expect(mailed.has(`guest${i}@outside.example`)).toBe(said[i] === 'mailed')
    })
    expect(await h.ctx.members.invitations('alice')).toHaveLength(30)
    // A day later the account may mail again.
    h.clock.now += day
    const later = await signedInHolder(h.app, h.ctx, 'alice', password)
    const made = await later.post('/account/members/invite', {
      email: 'late@outside.example',
      role: 'viewer',
    })
    expect(made.body).toContain(mailedTo)
    await mailer.idle()
    expect(smtp.received).toHaveLength(21)
  })

  it('over the admin API, 20 invitations of an account in a day answer mailed: true and the 21st mailed: false (the CLI prints it too), its link given to pass on', async () => {
    const answers = []
    for (let i = 0; i < 21; i++) {
      const res = await admin(h.app, 'POST', '/accounts/alice/members', {
        email: `guest${i}@outside.example`,
        role: 'viewer',
      })
      answers.push(res)
    }
    expect(answers.map((a) => [a.status, a.body.mailed])).toEqual([
      ...Array(20).fill([201, true]),
      [201, false],
    ])
    expect(answers[20]?.body).toEqual({
      email: 'guest20@outside.example',
      role: 'viewer',
      invitationUrl: expect.stringMatching(
        /^https:\/\/tessera\.test\/account\/invitations\/[A-Za-z0-9_-]{43}$/,
      ),
      expires: isoIn(7),
      mailed: false,
    })
    // `tessera member add` prints the same: its 22nd, held too.
    const printed = await memberCommand(h.ctx, h.ctx.config, {
      positionals: ['member', 'add', 'alice', 'guest21@outside.example'],
      values: { role: 'viewer' },
    })
    expect(printed).toEqual({
      email: 'guest21@outside.example',
      role: 'viewer',
      invitationUrl: expect.stringMatching(
        /^https:\/\/tessera\.test\/account\/invitations\/[A-Za-z0-9_-]{43}$/,
      ),
      expires: isoIn(7),
      mailed: false,
    })
    await mailer.idle()
    expect(smtp.received).toHaveLength(20)
    const mailed = smtp.received.flatMap((m) => m.rcptTo)
    expect(mailed).not.toContain('guest20@outside.example')
    expect(mailed).not.toContain('guest21@outside.example')
    expect(mailer.counts).toEqual({ sent: 20, failed: 0, held: 2 })
  })

  it('one address gets at most 3 invitation mails a day, whichever accounts invite it', async () => {
    const owners = {
      alice: await signedInHolder(h.app, h.ctx, 'alice', password),
      bob: await signedInHolder(h.app, h.ctx, 'bob', password),
    }
    const inviteBy = async (username: 'alice' | 'bob') => {
      const res = await owners[username].post('/account/members/invite', {
        email: 'Victim@Example.com',
        role: 'viewer',
      })
      expect(res.status).toBe(200)
      return res.body.includes(notMailed) ? 'held' : 'mailed'
    }
    const said = []
    for (const username of ['alice', 'bob', 'alice', 'bob', 'alice'] as const) {
      said.push(await inviteBy(username))
    }
    expect(said).toEqual(['mailed', 'mailed', 'mailed', 'held', 'held'])
    await mailer.idle()
    expect(smtp.received.map((m) => m.rcptTo)).toEqual([
      ['victim@example.com'],
      ['victim@example.com'],
      ['victim@example.com'],
    ])
    h.clock.now += day + 1
    owners.bob = await signedInHolder(h.app, h.ctx, 'bob', password)
    expect(await inviteBy('bob')).toBe('mailed')
    await mailer.idle()
    expect(smtp.received).toHaveLength(4)
  })

  it("counts an address's invitations of the last 24 hours through the index on (email, created), not the whole table", async () => {
    // The count of invitationMailsRepo.since, to one address.
    const count = h.ctx.db
      .selectFrom('invitations')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('email', '=', 'victim@example.com')
      .where('created', '>', isoIn(-1))
      .compile()
    if (dialect === 'postgres') {
      const { rows } = await sql<{ indexdef: string }>`select indexdef from pg_indexes
        where schemaname = current_schema() and indexname = 'invitations_by_email'`.execute(
        h.ctx.db,
      )
      expect(rows.map((r) => r.indexdef.replace(/^.* USING /, ''))).toEqual([
        'btree (email, created)',
      ])
      // With sequential scans off the plan shows whether the planner can use the index at all.
      const plan = await h.ctx.db.transaction().execute(async (trx) => {
        await sql`set local enable_seqscan = off`.execute(trx)
        return trx.executeQuery({ ...count, sql: `explain ${count.sql}` })
      })
      expect(JSON.stringify(plan.rows)).toContain('invitations_by_email')
    } else {
      const { rows } = await sql<{ sql: string }>`select sql from sqlite_master
        where name = 'invitations_by_email'`.execute(h.ctx.db)
      expect(rows.map((r) => r.sql)).toEqual([
        'CREATE INDEX "invitations_by_email" on "invitations" ("email", "created")',
      ])
      const plan = await h.ctx.db.executeQuery({ ...count, sql: `explain query plan ${count.sql}` })
      expect(JSON.stringify(plan.rows)).toContain('USING COVERING INDEX invitations_by_email')
    }
  })

  it('still invites when the SMTP server is down: the link is shown, the failure counted', async () => {
    await smtp.close()
    const res = await admin(h.app, 'POST', '/accounts/alice/members', {
      email: 'dana@example.com',
      role: 'viewer',
    })
    expect(res.status).toBe(201)
    // Handed to the mail server, not held by a limit: whether it arrives is the failure count's.
    expect(res.body.mailed).toBe(true)
    await mailer.idle()
    expect(mailer.counts).toEqual({ sent: 0, failed: 1, held: 0 })
    const page = await new DashboardClient(h.app).get(new URL(res.body.invitationUrl).pathname)
    expect(page.status).toBe(200)
  })
})

const isoIn = (days: number) => new Date(T0 + days * day).toISOString()
