/** A setting that cannot be used: start-up stops with its one-line message. */
export class ConfigError extends Error {}

/**
 * A system error's reason without its code and path (`no such file or directory`), or the first
 * line of any other error's message: for one-line ConfigErrors that name the file themselves.
 */
export function systemReason(err: unknown): string {
  const message = String((err as Error)?.message ?? err).split('\n')[0] ?? ''
  const system = /^E[A-Z]+: (.*?)(?:, \w+ '.*')?$/.exec(message)
  return system?.[1] ?? message
}
