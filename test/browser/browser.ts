import { accessSync, constants } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'

/** The Chromium the browser suite drives: CHROMIUM_PATH, else Debian's package. */
export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

const executable = (file: string) => {
  try {
    accessSync(file, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/**
 * Whether the browser suite can run. Without Chromium a developer's run skips the suite with
 * one line saying why; on CI (`CI` set) the missing browser is an error, never a silent skip.
 */
export function browserAvailable(): boolean {
  if (executable(chromiumPath)) return true
  const reason = `no Chromium at ${chromiumPath} (set CHROMIUM_PATH or apt-get install -y chromium)`
  if (process.env.CI) throw new Error(`browser suite cannot run on CI: ${reason}`)
  console.warn(`browser suite skipped: ${reason}`)
  return false
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}
