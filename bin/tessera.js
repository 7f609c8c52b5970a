#!/usr/bin/env node
// The `tessera` command. Runs the build made by `npm install` (prepare) or `npm run build`.
import { main } from '../dist/src/cli/main.js'

process.exitCode = await main()
