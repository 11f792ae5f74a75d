/**
 * Paths and columns: JupyterLab opens paths relative to the server's root; the report gives
 * absolute paths and 1-based columns in code points, editors want UTF-16 offsets.
 */

function trimSlashes(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') : path;
}

/**
 * `absolute` relative to the Jupyter server's root directory `serverRoot` (both absolute,
 * "/"-separated), or null when it lies outside it (JupyterLab cannot open it).
 */
export function serverRelative(absolute: string, serverRoot: string): string | null {
  if (!serverRoot || !absolute.startsWith('/')) {
    return null;
  }
  const root = trimSlashes(serverRoot.replace(/\\/g, '/'));
  const path = trimSlashes(absolute);
  if (path === root) {
    return '';
  }
  if (root === '/') {
    return path.slice(1);
  }
  return path.startsWith(root + '/') ? path.slice(root.length + 1) : null;
}

/**
 * The UTF-16 offset in `lineText` of the 0-based code-point column `column`, at most the
 * line's end.
 */
export function utf16Column(lineText: string, column: number): number {
  let offset = 0;
  let points = 0;
  for (const ch of lineText) {
    if (points >= column) {
      break;
    }
    offset += ch.length;
    points += 1;
  }
  return offset;
}
