// Reads a vitest JSON report (--reporter=json --outputFile.json=<file>) and exits non-zero
// unless tests ran and none failed. CI checks this besides vitest's exit status: on one Node 24
// run vitest exited 0 after printing "2 failed".
import { readFileSync } from 'node:fs'

const file = process.argv[2]
const label = process.argv[3] ?? file
let report
try {
  report = JSON.parse(readFileSync(file, 'utf8'))
} catch (err) {
  console.error(`${label}: no vitest report (${err.message})`)
  process.exit(1)
}
const { numTotalTests, numPassedTests, numFailedTests, numPendingTests, numFailedTestSuites } =
  report
const line = `${label}: ${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests} skipped, ${numFailedTestSuites} suites failed, of ${numTotalTests}`
if (numTotalTests > 0 && numFailedTests === 0 && numFailedTestSuites === 0) {
  console.log(line)
} else {
  console.error(`${line}: FAILED`)
  process.exit(1)
}
