import { parseArgs } from 'node:util'
import { AccountError } from '../accounts/service.js'
import { ConfigError, configuredOrigin, readEnv, toConfig } from '../config.js'
import { createContext } from '../context.js'
import { ApiError } from '../errors.js'
import { serve } from '../server.js'
import { formatSigningKeys, Keyring, newSigningKey, parseSigningKeys } from '../tokens/keyring.js'

const usage = `usage: tessera <command>

  serve                                       run the service (what npm start runs)
  account create <username> [--plan P] [--feature F]...
  account invite <username>                   a new dashboard setup link (voids older ones)
  token create <username> [--scopes a,b] [--note N] [--allowed-url U]...
  keys rotate                                 add a signing key
  migrate                                     apply database migrations

Configuration comes from the environment (and .env), as for the server.`

class UsageError extends Error {}

const print = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
}

async function run(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      plan: { type: 'string' },
      feature: { type: 'string', multiple: true },
      scopes: { type: 'string' },
      note: { type: 'string' },
      'allowed-url': { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  })
  const [command, sub, arg] = positionals
  if (values.help || command === undefined) {
    process.stdout.write(`${usage}\n`)
    return
  }
  const config = toConfig(readEnv())
  if (command === 'serve') return serve(config)

  if (command === 'keys' && sub === 'rotate') {
    if (config.signingKeys) {
      // Keys from the environment cannot be written back: hand the operator the new value.
      const keys = [...parseSigningKeys(config.signingKeys), newSigningKey()]
      const added = keys[keys.length - 1]
      return print({ id: added?.id, SIGNING_KEYS: formatSigningKeys(keys) })
    }
    return print({ id: Keyring.fromDataDir(config.dataDir).rotate().id })
  }

  const ctx = await createContext(config)
  try {
    if (command === 'migrate') return print({ migrated: true })
    const setupUrl = async (username: string) =>
      `${configuredOrigin(config.http)}/account/setup/${await ctx.holders.invite(username)}`
    if (command === 'account' && sub === 'create' && arg !== undefined) {
      const account = await ctx.accounts.create(arg, values.plan, values.feature ?? [])
      return print({ ...account, setupUrl: await setupUrl(account.username) })
    }
    if (command === 'account' && sub === 'invite' && arg !== undefined) {
      const account = await ctx.accounts.find(arg)
      if (account === undefined) throw new AccountError(`no such account: ${arg}`)
      return print({ username: account.username, setupUrl: await setupUrl(account.username) })
    }
    if (command === 'token' && sub === 'create' && arg !== undefined) {
      const account = await ctx.accounts.find(arg)
      if (account === undefined) throw new AccountError(`no such account: ${arg}`)
      const scopes =
        values.scopes
          ?.split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '') ?? []
      const token = await ctx.tokens.create(account, ctx.accounts.holder(account), {
        scopes,
        note: values.note,
        allowedUrls: values['allowed-url'] ?? null,
      })
      return print(token)
    }
    throw new UsageError(usage)
  } finally {
    await ctx.close()
  }
}

export async function main(argv = process.argv.slice(2)): Promise<number> {
  try {
    await run(argv)
    return 0
  } catch (err) {
    const known =
      err instanceof UsageError ||
      err instanceof ConfigError ||
      err instanceof AccountError ||
      err instanceof ApiError ||
      (err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
    const text =
      err instanceof ApiError && err.details
        ? `${err.message}: ${err.details}`
        : (err as Error).message
    process.stderr.write(`tessera: ${known ? text : (err as Error).stack}\n`)
    return err instanceof UsageError ? 2 : 1
  }
}
