/**
 * A notebook's cell marks, from its kernel: after each cell the notebook runs (and when its
 * kernel connects), the kernel is asked what changed since it was last asked
 * (`kernel.askKernel`); each cell's marks go to the `MarkStore` under the cell's model, found
 * by the cell id the kernel got from JupyterLab, else by execution count. A cell edited since
 * it ran gets its marks moved onto its text (those on changed lines go). "Check this cell
 * before running" asks the kernel to check the cell's current text in its place.
 *
 * A kernel without ipylsp (not installed, not loaded, not Python) answers nothing: nothing is
 * drawn, and a kernel that restarts or changes takes its marks with it.
 */

import type { ICellModel, ICodeCellModel } from '@jupyterlab/cells';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import {
  askKernel,
  CellMarks,
  MarksAnswer,
  kernelLanguage,
  marksExpression,
  preflightExpression
} from './kernel';
import { followText, IMark, MarkStore, marksOf } from './marks';
import { utf16Column } from './paths';

/** One cell's problems where they are now, for the Problems panel and the status item. */
export interface ICellProblems {
  model: ICellModel;
  /** The execution count the kernel knows the cell by (null: not run, a preflight). */
  count: number | null;
  marks: IMark[];
}

/** The cell the kernel names: by id, else the code cell with that execution count. */
export function findCell(
  panel: NotebookPanel,
  cellId: string | null | undefined,
  count: number | null | undefined
): ICellModel | null {
  const cells = panel.content.model?.cells;
  if (!cells) {
    return null;
  }
  let byCount: ICellModel | null = null;
  for (const cell of cells) {
    if (cellId && cell.id === cellId) {
      return cell;
    }
    if (
      byCount === null &&
      typeof count === 'number' &&
      count > 0 &&
      cell.type === 'code' &&
      (cell as ICodeCellModel).executionCount === count
    ) {
      byCount = cell;
    }
  }
  return cellId ? null : byCount;
}

/** Make `model` the active cell, in edit mode, the cursor at 1-based `line`, `column`. */
export async function revealCell(
  panel: NotebookPanel,
  model: ICellModel,
  line: number,
  column: number
): Promise<void> {
  const notebook = panel.content;
  const index = notebook.widgets.findIndex(cell => cell.model === model);
  if (index < 0) {
    return;
  }
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  await notebook.scrollToItem(index, 'smart');
  const cell = notebook.widgets[index];
  await cell.ready;
  notebook.mode = 'edit';
  const editor = cell.editor;
  if (!editor) {
    return;
  }
  const row = Math.min(Math.max(0, line - 1), Math.max(0, editor.lineCount - 1));
  const position = { line: row, column: utf16Column(editor.getLine(row) ?? '', column - 1) };
  editor.setCursorPosition(position);
  editor.revealPosition(position);
  editor.focus();
}

export class NotebookMarks implements IDisposable {
  constructor(
    readonly panel: NotebookPanel,
    private readonly _store: MarkStore
  ) {
    NotebookActions.executed.connect(this._onExecuted);
    const session = panel.sessionContext;
    session.kernelChanged.connect(this._reset);
    session.statusChanged.connect(this._onStatus);
    void session.ready.then(() => this.refresh());
  }

  /** Emitted when the cells' marks change (not while they only follow typing). */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The kernel answered with marks (it has ipylsp loaded). */
  get active(): boolean {
    return this._active;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Every cell with a problem, in notebook order, where the problems are now. */
  problems(): ICellProblems[] {
    const out: ICellProblems[] = [];
    for (const model of this.panel.content.model?.cells ?? []) {
      const known = this._known.get(model);
      const marks = known ? this._store.peek(model) : [];
      if (known && marks.length) {
        out.push({ model, count: known.count, marks });
      }
    }
    return out;
  }

  /** Ask the kernel what changed: one request at a time (one more when asked meanwhile), on
   * the current kernel (a request to a kernel since replaced is not waited for). */
  refresh(): Promise<void> {
    if (this._asking) {
      this._again = true;
      return this._asking;
    }
    const asking = this._ask(this._epoch).finally(() => {
      if (this._asking !== asking) {
        return; // a new kernel: its own asks run
      }
      this._asking = null;
      if (this._again && !this._disposed) {
        this._again = false;
        void this.refresh();
      }
    });
    this._asking = asking;
    return asking;
  }

  /** The marks `model`'s current text would have if it ran now (nothing runs). */
  async preflight(model: ICellModel): Promise<MarksAnswer | null> {
    const kernel = await this._kernel();
    if (!kernel) {
      return null;
    }
    const code = model.sharedModel.getSource();
    const answer = await askKernel(kernel, preflightExpression(model.id, code));
    if (!answer || answer.state !== 'ready' || !answer.preflight) {
      return answer;
    }
    this._active = true;
    const entry = answer.cells[0] as CellMarks | undefined;
    if (entry) {
      this._place(model, { ...entry, count: this._known.get(model)?.count ?? null });
      this._changed.emit();
    }
    return answer;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    NotebookActions.executed.disconnect(this._onExecuted);
    this.panel.sessionContext.kernelChanged.disconnect(this._reset);
    this.panel.sessionContext.statusChanged.disconnect(this._onStatus);
    this._forget();
    Signal.clearData(this);
  }

  private async _kernel(): Promise<Kernel.IKernelConnection | null> {
    const kernel = this.panel.sessionContext.session?.kernel ?? null;
    if (!kernel || this._disposed) {
      return null;
    }
    // user expressions are Python: other languages are never asked
    return (await kernelLanguage(kernel)) === 'python' ? kernel : null;
  }

  private async _ask(epoch: number): Promise<void> {
    const kernel = await this._kernel();
    if (!kernel || epoch !== this._epoch) {
      return;
    }
    const asked = performance.now();
    const answer = await askKernel(kernel, marksExpression(this._token, this._generation));
    if (
      this._disposed ||
      epoch !== this._epoch ||
      kernel !== this.panel.sessionContext.session?.kernel
    ) {
      return;
    }
    if (!answer || answer.state !== 'ready') {
      if (this._active) {
        this._forget(); // unloaded, or the answers stopped: nothing stale stays drawn
        this._changed.emit();
      }
      return;
    }
    this._active = true;
    const applying = performance.now();
    if (answer.complete || answer.token !== this._token) {
      const listed = new Set(answer.cells.map(c => this.find(c)));
      for (const model of [...this._known.keys()]) {
        if (!listed.has(model)) {
          this._known.delete(model);
          this._store.set(model, []);
        }
      }
    }
    this._token = answer.token;
    this._generation = answer.generation;
    for (const entry of answer.cells) {
      const model = this.find(entry);
      if (model) {
        this._place(model, entry);
      }
    }
    // what benchmarks/bench_lab.py reads: the kernel's answer, then the drawing (the editors
    // update as each cell's marks are set); only the last of each is kept
    performance.clearMeasures('ipylsp:ask-marks');
    performance.clearMeasures('ipylsp:draw-marks');
    const detail = {
      cells: answer.cells.length,
      marks: answer.cells.reduce((n, c) => n + c.diagnostics.length, 0)
    };
    performance.measure('ipylsp:ask-marks', { start: asked, end: applying, detail });
    performance.measure('ipylsp:draw-marks', { start: applying, detail });
    this._changed.emit();
  }

  find(entry: { cell_id: string | null; count: number | null }): ICellModel | null {
    return findCell(this.panel, entry.cell_id, entry.count);
  }

  /** `entry`'s marks on `model`'s text now (moved when it was edited since). */
  private _place(model: ICellModel, entry: CellMarks): void {
    this._known.set(model, entry);
    const marks = followText(
      marksOf(entry.diagnostics),
      entry.source,
      model.sharedModel.getSource()
    );
    this._store.set(model, marks);
  }

  private _forget(): void {
    for (const model of this._known.keys()) {
      this._store.set(model, []);
    }
    this._known.clear();
    this._token = '';
    this._generation = 0;
    this._active = false;
  }

  private readonly _onExecuted = (_: unknown, args: { notebook: unknown }): void => {
    if (args.notebook === this.panel.content) {
      void this.refresh();
    }
  };

  private readonly _reset = (): void => {
    this._forget();
    this._changed.emit();
    // the old kernel's request in flight (if any) is left: the new kernel is asked now
    this._epoch++;
    this._asking = null;
    this._again = false;
    void this.refresh();
  };

  private readonly _onStatus = (_: unknown, status: string): void => {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      this._forget();
      this._changed.emit();
    }
  };

  private _active = false;
  private _again = false;
  private _asking: Promise<void> | null = null;
  private _changed = new Signal<this, void>(this);
  private _disposed = false;
  private _epoch = 0;
  private _generation = 0;
  private _known = new Map<ICellModel, CellMarks>();
  private _token = '';
}
