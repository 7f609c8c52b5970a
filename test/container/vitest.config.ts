import path from 'node:path'
import { defineConfig } from 'vitest/config'

// `npm run test:container`: the image and the compose fleet, built and run with podman. Not part
// of `npm test`. One file at a time: both build the same image and the machine has 2 cores.
export default defineConfig({
  root: path.resolve(import.meta.dirname, '../..'),
  test: {
    include: ['test/container/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 1_200_000,
  },
})
