// `import '@qtk/observers/register'`: the built-in observers in @qtk/spec's registry by name, for code that looks
// them up there (createObserver, a list of names). Fake-quants and the default qconfigs need no registration.
import { registerBuiltinObservers } from './builtin.js';

registerBuiltinObservers();
