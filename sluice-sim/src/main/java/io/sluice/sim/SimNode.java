package io.sluice.sim;

/** A file or a directory of a {@link SimFileSystem}. */
abstract sealed class SimNode permits FileNode, DirectoryNode {
}
