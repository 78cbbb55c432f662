// The manifest edit `pnpm use-in-project DIR` makes; the install it leads to is the one check:install runs
// (withQtkTarballs builds that project's manifest too).
import { describe, expect, it } from 'vitest';
import { runtimePackages, withQtkTarballs } from './pack-and-install.js';
import { publishablePackages } from './workspace.js';
import { tarballSpecs } from './use-in-project.js';

describe('use-in-project', () => {
  it('adds every QTK tarball as a dependency and a pnpm override, relative to the project, keeping the rest', () => {
    const specs = tarballSpecs(
      '/home/me/app',
      new Map([
        ['@qtk/core', '/home/me/app/qtk-tarballs/qtk-core-0.1.0.tgz'],
        ['@qtk/tensor', '/home/me/app/qtk-tarballs/qtk-tensor-0.1.0.tgz'],
      ]),
    );
    const manifest = withQtkTarballs(
      {
        name: 'app',
        type: 'module',
        dependencies: { zod: '^3.23.0', '@qtk/core': 'file:./old/qtk-core-0.0.9.tgz' },
        pnpm: { overrides: { zod: '3.23.8' }, onlyBuiltDependencies: ['esbuild'] },
      },
      specs,
    );
    expect(manifest).toEqual({
      name: 'app',
      type: 'module',
      dependencies: {
        zod: '^3.23.0',
        '@qtk/core': 'file:./qtk-tarballs/qtk-core-0.1.0.tgz',
        '@qtk/tensor': 'file:./qtk-tarballs/qtk-tensor-0.1.0.tgz',
      },
      pnpm: {
        overrides: {
          zod: '3.23.8',
          '@qtk/core': 'file:./qtk-tarballs/qtk-core-0.1.0.tgz',
          '@qtk/tensor': 'file:./qtk-tarballs/qtk-tensor-0.1.0.tgz',
        },
        onlyBuiltDependencies: ['esbuild'],
      },
    });
  });

  it('packs what an application runs: every publishable package but the vitest-based testkit', () => {
    const names = runtimePackages(publishablePackages()).map((p) => p.manifest.name);
    expect(names).toContain('@qtk/core');
    expect(names).toContain('@qtk/onnx');
    expect(names).toContain('@qtk/cli');
    expect(names).not.toContain('@qtk/testkit');
    expect(names).not.toContain('@qtk/demo');
  });
});
