import { describe, expect, it } from 'vitest';
import { publishablePackages } from './workspace.js';

describe('publishablePackages', () => {
  it('leaves out private packages (the test models, the web app), so the package checks never pack them', () => {
    const names = publishablePackages().map((p) => p.manifest.name);
    expect(names).toEqual(expect.arrayContaining(['@qtk/tensor', '@qtk/nn', '@qtk/cli']));
    expect(names).not.toContain('@qtk/test-models');
    expect(names).not.toContain('@qtk/web');
  });
});
