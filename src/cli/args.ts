import { parseArgs } from 'node:util'
import { type Args, type Command, commands, needs, type OptionName, options } from './words.js'

/** A command line that names no command, or misuses one: one line, exit status 2. */
export class UsageError extends Error {}

/** A command that cannot do what it was asked (an unknown id): one line, exit status 1. */
export class CommandError extends Error {}

/** What a command line asks for: the usage text, or a command with its arguments. */
export type Line = { help: true } | { help: false; command: Command; args: Args }

const firstWords = [...new Set(commands.map((c) => c.words.split(' ')[0] as string))]

const list = (words: string[]) =>
  words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`

/** Edits from one word to the other: insertions, deletions, substitutions, transpositions. */
export function distance(a: string, b: string): number {
  let before: number[] = []
  let row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(
        (row[j] as number) + 1,
        (next[j - 1] as number) + 1,
        (row[j - 1] as number) + cost,
      )
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, (before[j - 2] as number) + 1)
      }
      next.push(d)
    }
    before = row
    row = next
  }
  return row[b.length] as number
}

/**
 * The word of `known` nearest to `word` if it is likely what was meant: a typo or two away
 * (one for a short word), or the one of them beginning the other (`--expires` for `--expires-at`).
 */
export function nearest(word: string, known: readonly string[]): string | undefined {
  let best: string | undefined
  let least = Number.POSITIVE_INFINITY
  for (const candidate of known) {
    const d = distance(word, candidate)
    const shorter = Math.min(word.length, candidate.length)
    const prefix = shorter >= 3 && (candidate.startsWith(word) || word.startsWith(candidate))
    if ((d <= (word.length <= 4 ? 1 : 2) || prefix) && d < least) {
      best = candidate
      least = d
    }
  }
  return best
}

/** The command the words name, or a one-line refusal naming the word that is not one. */
function commandOf([first = '', second]: string[]): Command {
  const whole = commands.find((c) => c.words === first)
  if (whole !== undefined) return whole
  const group = commands.filter((c) => c.words.startsWith(`${first} `))
  if (group.length === 0) {
    const near = nearest(first, firstWords)
    const hint = near ? `did you mean ${near}?` : `the commands are ${list(firstWords)}`
    throw new UsageError(`unknown command ${first}; ${hint}`)
  }
  const subs = group.map((c) => c.words.slice(first.length + 1))
  const found = group.find((c) => c.words === `${first} ${second}`)
  if (found !== undefined) return found
  if (second === undefined) {
    throw new UsageError(`usage: tessera ${first} ${subs.join('|')} ... (tessera --help)`)
  }
  const near = nearest(second, subs)
  const hint = near ? `did you mean ${first} ${near}?` : `${first} takes ${list(subs)}`
  throw new UsageError(`unknown command ${first} ${second}; ${hint}`)
}

type OptionToken = { name: string; rawName: string; value?: string; inlineValue?: boolean }

/** An option the command takes, with a value where it needs one; else a one-line refusal. */
function checkOption(token: OptionToken, command: Command | undefined): void {
  const { name, rawName, value } = token
  const taken: readonly string[] = command?.options ?? []
  if (name !== 'help' && !taken.includes(name)) {
    const near = nearest(name, taken)
    const flags = taken.map((o) => `--${o}`)
    const hint = near
      ? `did you mean --${near}?`
      : command === undefined
        ? 'tessera --help lists the commands and their options'
        : taken.length === 0
          ? 'it takes none'
          : `it takes ${list(flags)}`
    const where = command === undefined ? '' : ` for ${command.words}`
    throw new UsageError(`unknown option ${rawName}${where}; ${hint}`)
  }
  const type = options[name as OptionName].type
  if (type === 'string' && value === undefined) throw new UsageError(`${rawName} needs a value`)
  if (type === 'string' && !token.inlineValue && value?.startsWith('-')) {
    // `--note --plan`: more likely a forgotten value than a note spelled like an option.
    throw new UsageError(
      `${rawName} needs a value; one starting with - goes as ${rawName}=${value}`,
    )
  }
  if (type === 'boolean' && value !== undefined) throw new UsageError(`${rawName} takes no value`)
}

/** How many arguments the command's usage line requires: its words in angle brackets. */
const required = (command: Command) =>
  command.usage
    .slice(command.words.length)
    .split(' ')
    .filter((word) => word.startsWith('<')).length

/** Whether an option has a value that says something: a note not blank, a list not empty. */
const filled = (value: unknown) =>
  typeof value === 'string' && value.split(',').some((part) => part.trim() !== '')

/** The options a command cannot do without (`token create`'s note and scopes), in one line. */
function checkNeeds(command: Command, values: Record<string, unknown>): void {
  const missing = command.needs.filter((name) => !filled(values[name]))
  if (missing.length === 0) return
  const said = missing.map((name) => `--${name} ${needs[name]}`)
  throw new UsageError(`${command.words} needs ${list(said)}`)
}

/**
 * The command line as the command it names reads it. Node's own refusals of an unknown option
 * are a paragraph with an unbalanced quote and know nothing of the command: these are one line
 * naming the word and the nearest one the command knows.
 */
export function readArgs(argv: string[]): Line {
  const { values, positionals, tokens } = parseArgs({
    args: argv,
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  })
  if (values.help === true) return { help: true }
  const given = tokens.filter((t) => t.kind === 'option')
  if (positionals.length === 0 && given.length === 0) return { help: true }
  const command = positionals.length === 0 ? undefined : commandOf(positionals)
  for (const token of given) checkOption(token, command)
  if (command === undefined) return { help: true }
  // Arguments missing: the command's usage line, before anything is opened.
  const args = positionals.length - command.words.split(' ').length
  if (args < required(command)) throw new UsageError(`usage: tessera ${command.usage}`)
  checkNeeds(command, values)
  return { help: false, command, args: { positionals, values: values as Args['values'] } }
}
