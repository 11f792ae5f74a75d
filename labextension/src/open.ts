import type { CodeEditor } from '@jupyterlab/codeeditor';
import type { IDocumentManager } from '@jupyterlab/docmanager';

import { utf16Column } from './paths';

/**
 * Open `path` (relative to the server root) in JupyterLab and put the cursor at the 1-based
 * `line` and code-point `column`. No command link: those raise the trust dialog in untrusted
 * notebooks. Resolves to false when the document could not be opened.
 */
export async function openLocation(
  docManager: IDocumentManager,
  path: string,
  line: number,
  column: number
): Promise<boolean> {
  const widget = docManager.openOrReveal(path);
  if (!widget) {
    return false;
  }
  await widget.context.ready;
  await widget.revealed;
  const editor = (widget.content as { editor?: CodeEditor.IEditor }).editor;
  if (!editor) {
    return true;
  }
  const row = Math.min(Math.max(0, line - 1), Math.max(0, editor.lineCount - 1));
  const text = editor.getLine(row) ?? '';
  const position = { line: row, column: utf16Column(text, column - 1) };
  editor.setCursorPosition(position);
  editor.revealPosition(position);
  editor.focus();
  return true;
}
