package io.sluice.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;

/**
 * A channel that holds its bytes in a buffer of its own before it sends them, which the store fills straight from
 * a segment file when it is the target of {@link OpaqueSlice#transferTo}: for a target that copies what it sends
 * anyway (TLS encrypts it), one read into its buffer takes the place of {@code FileChannel.transferTo}'s 8 KiB
 * reads into a buffer of the JDK's and a write of each.
 */
public interface FillableChannel extends WritableByteChannel {

    /**
     * @return the buffer to read into, in write mode with room left (sending what it held first if it was full);
     *     bytes put between its position and limit, with the position moved past them, are sent like written ones
     * @throws IOException if sending what the buffer held failed
     */
    ByteBuffer room() throws IOException;
}
