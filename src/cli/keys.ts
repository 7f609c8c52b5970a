import { adminKeyEntry, isOperatorScope, newAdminKey, type OperatorScope } from '../admin/keys.js'
import type { Config } from '../config.js'
import { formatSigningKeys, Keyring, newSigningKey, parseSigningKeys } from '../tokens/keyring.js'
import { CommandError } from './args.js'

/**
 * `admin-key create`'s `--scope`, which has no default: a key's purpose is chosen, never
 * assumed (a full key by default would hand every new verifier every account).
 */
export function scopeOption(scope: string | undefined): OperatorScope {
  if (isOperatorScope(scope)) return scope
  throw new CommandError(
    `admin-key create needs --scope verifier (introspection, leases, usage reports and the ` +
      `event stream: for @tessera/verifier) or --scope admin (every route)` +
      (scope === undefined ? '' : `; not ${scope}`),
  )
}

/** `tessera admin-key create` with ADMIN_KEYS set: the new value to give every instance. */
export function adminKeyInEnv(adminKeys: string, scope: string | undefined) {
  // As for SIGNING_KEYS: the environment cannot be written back; nothing is stored.
  const made = newAdminKey(Date.now(), scopeOption(scope))
  const entry = adminKeyEntry(made.id, made.scope, made.key)
  return { ...made, ADMIN_KEYS: `${adminKeys},${entry}` }
}

/**
 * `tessera keys rotate`: a new signing key, as the new SIGNING_KEYS (no database), or added to
 * DATA_DIR's key file and written into the audit log (`record`, given by the caller).
 */
export async function rotateKeys(config: Config, record: (id: string) => Promise<void>) {
  if (config.signingKeys) {
    // Keys from the environment cannot be written back: hand the operator the new value.
    const keys = [...parseSigningKeys(config.signingKeys), newSigningKey()]
    const added = keys[keys.length - 1]
    return { id: added?.id, SIGNING_KEYS: formatSigningKeys(keys) }
  }
  const { id } = Keyring.fromDataDir(config.dataDir).rotate()
  await record(id)
  return { id }
}
