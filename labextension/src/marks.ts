/**
 * Marks in CodeMirror 6 editors: problems underlined in their severity's colour, the message,
 * codes and sources on hover. One `MarkStore` holds each editor model's marks (a cell's model,
 * a file's document model), in 1-based lines and code-point columns, so an editor made later
 * (a cell scrolled into view) draws them too; every editor JupyterLab makes gets the
 * extension through its editor extension registry and draws its model's marks.
 *
 * When the text changes, the marks on the lines that changed go and the others follow the
 * text (the editor maps them and writes them back to the store) until new marks are set.
 */

import type { CodeEditor } from '@jupyterlab/codeeditor';
import { EditorState, Extension, StateEffect, StateField, Text } from '@codemirror/state';
import { Decoration, DecorationSet, EditorView, hoverTooltip, ViewPlugin } from '@codemirror/view';
import { ISignal, Signal } from '@lumino/signaling';

import { utf16Column } from './paths';
import { joinUnique, LABELS, problemRows } from './report';
import type { Diagnostic, Severity } from './schema';

/** One problem (a row: a problem several servers reported is one mark) where it is now. */
export interface IMark {
  /** 1-based line and code-point column of the start; end exclusive. */
  line: number;
  column: number;
  end_line: number;
  end_column: number;
  /** The row's diagnostics: the first says where and what, the others repeat it. */
  row: Diagnostic[];
}

export function severityOf(mark: IMark): Severity {
  return mark.row[0].severity;
}

export function marksOf(diagnostics: Diagnostic[]): IMark[] {
  return problemRows(diagnostics).map(row => ({
    line: row[0].line,
    column: row[0].column,
    end_line: row[0].end_line,
    end_column: row[0].end_column,
    row
  }));
}

/** The row's diagnostics again, `same_as` pointing into the returned list. */
export function diagnosticsOf(marks: IMark[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const mark of marks) {
    const first = out.length;
    mark.row.forEach((d, i) => {
      const moved: Diagnostic = {
        ...d,
        line: mark.line,
        column: mark.column,
        end_line: mark.end_line,
        end_column: mark.end_column
      };
      delete moved.same_as;
      out.push(i ? { ...moved, same_as: first } : moved);
    });
  }
  return out;
}

/**
 * `marks` made for `before`, moved onto `after`: the lines both texts share at their start and
 * at their end keep their marks (those at the end shift by the lines added or removed), marks
 * on the lines between go.
 */
export function followText(marks: IMark[], before: string, after: string): IMark[] {
  if (before === after) {
    return marks;
  }
  const a = before.split('\n');
  const b = after.split('\n');
  let top = 0;
  while (top < a.length && top < b.length && a[top] === b[top]) {
    top++;
  }
  let bottom = 0;
  while (
    bottom < a.length - top &&
    bottom < b.length - top &&
    a[a.length - 1 - bottom] === b[b.length - 1 - bottom]
  ) {
    bottom++;
  }
  const shift = b.length - a.length;
  const tail = a.length - bottom; // 0-based first line of the shared end
  return marks.flatMap(mark => {
    if (mark.end_line - 1 < top) {
      return [mark];
    }
    if (mark.line - 1 >= tail) {
      return [{ ...mark, line: mark.line + shift, end_line: mark.end_line + shift }];
    }
    return [];
  });
}

/** Each model's marks. `enabled` false: none are given out (the setting turns them off). */
export class MarkStore {
  get changed(): ISignal<this, CodeEditor.IModel> {
    return this._changed;
  }

  get enabled(): boolean {
    return this._enabled;
  }

  set enabled(value: boolean) {
    if (value === this._enabled) {
      return;
    }
    this._enabled = value;
    for (const model of [...this._models]) {
      this._emit(model);
    }
  }

  get(model: CodeEditor.IModel): IMark[] {
    return this._enabled ? (this._marks.get(model) ?? []) : [];
  }

  /** The marks of `model`, drawn or not (the Problems panel lists them either way). */
  peek(model: CodeEditor.IModel): IMark[] {
    return this._marks.get(model) ?? [];
  }

  /** New marks for `model`'s current text: its editors draw them. */
  set(model: CodeEditor.IModel, marks: IMark[]): void {
    const before = this._marks.get(model) ?? [];
    if (!marks.length && !before.length) {
      return;
    }
    if (marks.length) {
      this._marks.set(model, marks);
      this._models.add(model);
    } else {
      this._marks.delete(model);
      this._models.delete(model);
    }
    this._emit(model);
  }

  /** Emitted when an editor moved a model's marks with its text (typing). */
  get followed(): ISignal<this, CodeEditor.IModel> {
    return this._followed;
  }

  /** The marks an editor moved with the text (its editors have them already). */
  follow(model: CodeEditor.IModel, marks: IMark[]): void {
    if (this._enabled) {
      this._marks.set(model, marks);
      this._followed.emit(model);
    }
  }

  private _emit(model: CodeEditor.IModel): void {
    if (model.isDisposed) {
      this._marks.delete(model);
      this._models.delete(model);
      return;
    }
    this._changed.emit(model);
  }

  private _changed = new Signal<this, CodeEditor.IModel>(this);
  private _followed = new Signal<this, CodeEditor.IModel>(this);
  private _enabled = true;
  private _marks = new WeakMap<CodeEditor.IModel, IMark[]>();
  private _models = new Set<CodeEditor.IModel>();
}

// -- in the editor ---------------------------------------------------------------------------

function offset(doc: Text, line: number, column: number): number {
  if (line < 1) {
    return 0;
  }
  if (line > doc.lines) {
    return doc.length;
  }
  const at = doc.line(line);
  return at.from + utf16Column(at.text, column - 1);
}

/** 1-based line and code-point column of `pos`. */
function position(doc: Text, pos: number): [number, number] {
  const at = doc.lineAt(pos);
  let points = 0;
  for (let i = 0; i < pos - at.from; i++) {
    const unit = at.text.charCodeAt(i);
    if (unit < 0xdc00 || unit > 0xdfff) {
      points++; // a low surrogate ends a code point its high one counted
    }
  }
  return [at.number, points + 1];
}

const setMarks = StateEffect.define<IMark[]>();

function decorations(marks: IMark[], doc: Text): DecorationSet {
  const ranges = marks.flatMap(mark => {
    let from = offset(doc, mark.line, mark.column);
    let to = Math.max(from, offset(doc, mark.end_line, mark.end_column));
    if (to === from) {
      // an empty range (a missing token): its character, or the one before at a line's end
      const at = doc.lineAt(from);
      if (to < at.to) {
        to += 1;
      } else if (from > at.from) {
        from -= 1;
      } else {
        return [];
      }
    }
    const severity = severityOf(mark);
    return [
      Decoration.mark({
        class: `cm-ipylsp-mark cm-ipylsp-${severity}`,
        attributes: { 'data-ipylsp-severity': severity },
        ipylsp: mark
      }).range(from, to)
    ];
  });
  return Decoration.set(ranges, true);
}

const marksField = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(marks, tr) {
    marks = marks.map(tr.changes);
    if (tr.docChanged && marks.size) {
      const doc = tr.newDoc;
      const changed: [number, number][] = [];
      tr.changes.iterChangedRanges((_fromA, _toA, fromB, toB) => {
        changed.push([doc.lineAt(fromB).from, doc.lineAt(toB).to]);
      });
      marks = marks.update({
        filter: (from, to) => !changed.some(([start, end]) => from <= end && to >= start)
      });
    }
    for (const effect of tr.effects) {
      if (effect.is(setMarks)) {
        marks = decorations(effect.value, tr.newDoc);
      }
    }
    return marks;
  },
  provide: field => EditorView.decorations.from(field)
});

/** The marks in `state` where they are now. */
function currentMarks(state: EditorState): IMark[] {
  const out: IMark[] = [];
  const iter = (state.field(marksField, false) ?? Decoration.none).iter();
  while (iter.value) {
    const mark = (iter.value.spec as { ipylsp: IMark }).ipylsp;
    const [line, column] = position(state.doc, iter.from);
    const [endLine, endColumn] = position(state.doc, iter.to);
    out.push({ ...mark, line, column, end_line: endLine, end_column: endColumn });
    iter.next();
  }
  return out;
}

/** The hover's line for one mark: as the reports say it, with the whole message. */
export function hoverLine(mark: IMark): string {
  const first = mark.row[0];
  const codes = joinUnique(mark.row.map(d => d.code));
  const sources = joinUnique(mark.row.map(d => d.source || d.server));
  return [
    `${LABELS.get(first.severity) ?? first.severity.toUpperCase()} ${first.message}`,
    codes ? ` [${codes}]` : '',
    sources ? ` (${sources})` : ''
  ].join('');
}

const hover = hoverTooltip((view, pos) => {
  const found: { from: number; to: number; mark: IMark }[] = [];
  view.state.field(marksField, false)?.between(pos, pos, (from, to, value) => {
    found.push({ from, to, mark: (value.spec as { ipylsp: IMark }).ipylsp });
  });
  if (!found.length) {
    return null;
  }
  return {
    pos: Math.min(...found.map(f => f.from)),
    end: Math.max(...found.map(f => f.to)),
    above: true,
    create: () => {
      const dom = document.createElement('div');
      dom.className = 'jp-ipylsp-hover';
      for (const { mark } of found) {
        const line = document.createElement('div');
        line.className = `jp-ipylsp-hover-line jp-ipylsp-${severityOf(mark)}`;
        line.textContent = hoverLine(mark);
        dom.appendChild(line);
      }
      return { dom };
    }
  };
});

const theme = EditorView.baseTheme({
  '.cm-ipylsp-mark': {
    textDecorationLine: 'underline',
    textDecorationStyle: 'wavy',
    textDecorationSkipInk: 'none',
    textUnderlineOffset: '3px'
  },
  '.cm-ipylsp-error': { textDecorationColor: 'var(--jp-error-color1, #d32f2f)' },
  '.cm-ipylsp-warning': { textDecorationColor: 'var(--jp-warn-color1, #f57c00)' },
  '.cm-ipylsp-information': { textDecorationColor: 'var(--jp-info-color1, #0097a7)' },
  '.cm-ipylsp-hint': {
    textDecorationColor: 'var(--jp-info-color2, #4dd0e1)',
    textDecorationStyle: 'dotted'
  }
});

/** What one editor of `model` needs: its marks, kept in step with the store both ways. */
export function marksExtension(store: MarkStore, model: CodeEditor.IModel): Extension {
  const sync = ViewPlugin.define(view => {
    const changed = (_: MarkStore, which: CodeEditor.IModel): void => {
      if (which === model) {
        view.dispatch({ effects: setMarks.of(store.get(model)) });
      }
    };
    store.changed.connect(changed);
    return {
      update: update => {
        if (update.docChanged && update.startState.field(marksField).size) {
          store.follow(model, currentMarks(update.state));
        }
      },
      destroy: () => {
        store.changed.disconnect(changed);
      }
    };
  });
  return [marksField.init(state => decorations(store.get(model), state.doc)), sync, hover, theme];
}

/** The marks drawn in `view` now (for tests and the benchmark). */
export function drawnMarks(view: EditorView): IMark[] {
  return currentMarks(view.state);
}
