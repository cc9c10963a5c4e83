#!/usr/bin/env node
// sluice command-line entry: runs the TypeScript sources through tsx's loader.
import { keepTickObjectShape } from './tick-shape.js';

// First, before any collection could free what it keeps (see bin/tick-shape.js).
keepTickObjectShape();
const { register } = await import('tsx/esm/api');
register();
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2));
