// convertFx's handling of fxWrap-ed methods: the modules they call get fixed-point stand-ins converted
// on first call, and a non-root owner of a wrapped method is placed with its methods and converted children.
import { shallowCloneModule } from '@qtk/fusion';
import { findSubmodule, type GraphModule } from '@qtk/ir';
import { DeQuantStub, type Module } from '@qtk/nn';
import { isWrappedMethodCall, modulesOnlyInWrappedMethods } from './fx-wrapped-modules.js';
import { QatModule } from './qat-module.js';
import { LateConvertedModule, type LateConversionEnv } from './wrapped-conversion.js';

/** Whether a module of a wrapped method's subtree gets a LateConvertedModule: QAT modules, DeQuantStubs and leaves. */
function convertsLate(m: Module): boolean {
  return m instanceof QatModule || m instanceof DeQuantStub || m.namedChildren().length === 0;
}

/** `module` (a copy) with every module that convertsLate replaced by a LateConvertedModule; `path` is its place in the model. */
function withLateConversion(module: Module, path: string, env: LateConversionEnv): Module {
  if (convertsLate(module)) return new LateConvertedModule(module, path, env);
  const replaced: string[] = [];
  for (const [sub, m] of module.namedModules()) {
    if (sub === '' || replaced.some((r) => sub.startsWith(`${r}.`)) || !convertsLate(m)) continue;
    const dot = sub.lastIndexOf('.');
    const parent = dot < 0 ? module : module.getSubmodule(sub.slice(0, dot));
    parent.setChild(sub.slice(dot + 1), new LateConvertedModule(m, `${path}.${sub}`, env));
    replaced.push(sub);
  }
  return module;
}

/** Adds copies of the modules only fxWrap-ed methods call to the converted model, with late conversion. */
export function addWrappedMethodModules(
  qatModel: GraphModule,
  out: GraphModule,
  copyOf: (m: Module) => Module,
  env: LateConversionEnv,
): void {
  const added: string[] = [];
  for (const [path, m] of modulesOnlyInWrappedMethods(qatModel)) {
    if (added.some((a) => path.startsWith(`${a}.`))) continue;
    out.addSubmodule(path, withLateConversion(copyOf(m), path, env));
    added.push(path);
  }
}

/**
 * Puts a shallow copy of each non-root owner of a wrapped method at its path, so the method can be
 * called there, with the converted model's children in place of the QAT model's.
 */
export function placeWrappedMethodOwners(qatModel: GraphModule, out: GraphModule): void {
  const owners = new Set(out.graph.nodes.filter(isWrappedMethodCall).map((n) => n.target));
  for (const owner of owners) {
    if (owner === '') continue; // the root: the GraphModule's root object, with its children
    const clone = shallowCloneModule(qatModel.getSubmodule(owner));
    const placed = findSubmodule(out, owner);
    for (const [name] of clone.namedChildren()) clone.setChild(name, null);
    if (placed) for (const [name, child] of placed.namedChildren()) clone.setChild(name, child);
    clone.training = false;
    out.addSubmodule(owner, clone);
  }
}
