import { defineConfig } from 'vitest/config'

// Storage and HTTP suites run once per dialect: SQLite always, PostgreSQL when
// TEST_DATABASE_URL is set (.ci/run sets it and requires the server).
const postgres = process.env.TEST_DATABASE_URL
const perDialect = [
  'test/http/**/*.test.ts',
  'test/e2e/sdk.test.ts',
  'test/e2e/crash.test.ts',
  'test/e2e/shutdown.test.ts',
  'test/e2e/slow-clients.test.ts',
]

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true as const,
        test: {
          name: 'sqlite',
          include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
          // test/container: the image and the compose fleet, `npm run test:container` (podman).
          exclude: ['test/scale/**', 'test/container/**'],
          env: { TEST_DIALECT: 'sqlite' },
        },
      },
      ...(postgres
        ? [
            {
              extends: true as const,
              test: {
                name: 'postgres',
                include: [...perDialect, 'test/scale/**/*.test.ts'],
                env: { TEST_DIALECT: 'postgres' },
              },
            },
          ]
        : []),
    ],
  },
})
