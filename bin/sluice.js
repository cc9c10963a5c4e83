#!/usr/bin/env node
// sluice command-line entry: runs the TypeScript sources through tsx's loader.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2));
