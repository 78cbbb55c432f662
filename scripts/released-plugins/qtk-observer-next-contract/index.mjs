// A plugin for a plugin contract QTK does not implement yet: registering it must fail, naming the QTK it needs.
export const qtkPlugin = { apiVersion: 2, name: 'qtk-observer-next-contract', requiresQtk: '1.0.0', observers: [] };
