package io.sluice.sim;

import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

/**
 * What the disk holds after a power cut, chosen by a seeded random generator per {@link CrashModel}: per file,
 * every 4 KiB page whose volatile bytes differ from its durable bytes independently survives, is lost, or is torn
 * (each 512-byte sector independently old or new), so later pages may survive where earlier ones did not; an
 * unforced size change survives or not. Per directory, a prefix of the logged name operations survives. A file no
 * surviving name reaches is gone.
 *
 * <p>One cut per instance; used under the dying file system's lock.
 */
final class PowerCut {

    private final SplittableRandom random;
    private final CrashModel model;
    /** The survivor of each node reached, so a node reached twice is copied (and its pages chosen) once. */
    private final Map<SimNode, SimNode> copies = new IdentityHashMap<>();

    PowerCut(SplittableRandom random, CrashModel model) {
        this.random = random;
        this.model = model;
    }

    /**
     * @param root the root directory when the power is cut
     * @return the root directory after it, whose files hold their bytes as {@link FileNode#pending} until
     *     materialized
     */
    DirectoryNode survivor(DirectoryNode root) {
        return (DirectoryNode) survive(root);
    }

    /** @return the files that survived, each once */
    List<FileNode> survivingFiles() {
        return copies.values().stream().filter(node -> node instanceof FileNode).map(node -> (FileNode) node)
                .toList();
    }

    private SimNode survive(SimNode node) {
        SimNode existing = copies.get(node);
        if (existing != null) {
            return existing;
        }
        if (node instanceof FileNode file) {
            FileNode copy = new FileNode();
            copy.pending = survivingContent(file);
            copies.put(node, copy);
            return copy;
        }
        DirectoryNode directory = (DirectoryNode) node;
        DirectoryNode copy = new DirectoryNode();
        copies.put(node, copy);
        TreeMap<String, SimNode> entries = new TreeMap<>(directory.durable);
        int kept = model.namePrefix(random, directory.log.size());
        for (int i = 0; i < kept; i++) {
            directory.log.get(i).applyTo(entries);
        }
        for (Map.Entry<String, SimNode> entry : entries.entrySet()) {
            copy.entries.put(entry.getKey(), survive(entry.getValue()));
        }
        copy.durable.putAll(copy.entries);
        return copy;
    }

    /** The bytes a file holds after the power cut. */
    private byte[] survivingContent(FileNode file) {
        long size = file.size == file.durableSize ? file.size : model.keepsNewSize(random) ? file.size : file.durableSize;
        byte[] content = new byte[Math.toIntExact(size)];
        long span = Math.max(size, 0);
        boolean holeMade = false;
        for (long page = 0; page < span; page += SimFileSystem.PAGE_BYTES) {
            int length = (int) Math.min(SimFileSystem.PAGE_BYTES, span - page);
            CrashModel.Fate fate;
            if (samePage(file, page, length)) {
                fate = CrashModel.Fate.KEPT;
            } else if (model.firstPageLost()) {
                fate = holeMade ? CrashModel.Fate.KEPT : CrashModel.Fate.LOST;
                holeMade = true;
            } else {
                fate = model.pageFate(random);
            }
            switch (fate) {
                case KEPT -> copyVolatile(file, page, length, content);
                case LOST -> copyDurable(file, page, length, content);
                case TORN -> {
                    for (long sector = page; sector < page + length; sector += SimFileSystem.SECTOR_BYTES) {
                        int sectorLength = (int) Math.min(SimFileSystem.SECTOR_BYTES, page + length - sector);
                        if (random.nextBoolean()) {
                            copyVolatile(file, sector, sectorLength, content);
                        } else {
                            copyDurable(file, sector, sectorLength, content);
                        }
                    }
                }
            }
        }
        return content;
    }

    private static boolean samePage(FileNode file, long at, int length) {
        for (int i = 0; i < length; i++) {
            if (file.volatileByte(at + i) != file.durableByte(at + i)) {
                return false;
            }
        }
        return true;
    }

    private static void copyVolatile(FileNode file, long at, int length, byte[] content) {
        for (int i = 0; i < length; i++) {
            content[(int) at + i] = file.volatileByte(at + i);
        }
    }

    private static void copyDurable(FileNode file, long at, int length, byte[] content) {
        for (int i = 0; i < length; i++) {
            content[(int) at + i] = file.durableByte(at + i);
        }
    }
}
