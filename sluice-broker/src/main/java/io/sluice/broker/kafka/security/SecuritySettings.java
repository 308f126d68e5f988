package io.sluice.broker.kafka.security;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import org.apache.kafka.common.security.auth.SecurityProtocol;

/**
 * A broker's listeners and their security, from Kafka's own settings: {@code listeners}, {@code advertised.listeners},
 * {@code listener.security.protocol.map}, {@code ssl.*}, {@code sasl.enabled.mechanisms}, the JAAS configuration of
 * each listener and mechanism ({@code listener.name.<listener>.<mechanism>.sasl.jaas.config}), SASL/OAUTHBEARER's
 * server callback handler and {@code sasl.oauthbearer.*} keys ({@code OAuthBearerSettings}),
 * {@code connections.max.reauth.ms}, and the authorizer's {@code authorizer.class.name}, {@code super.users} and
 * {@code allow.everyone.if.no.acl.found}. Any {@code ssl.*}, {@code sasl.*} or {@code connections.max.reauth.ms} may be
 * given for one listener with the prefix {@code listener.name.<listener lowercase>.}, which wins over the bare key.
 */
public final class SecuritySettings {

    /** The keys taken, without a listener prefix. */
    public static final Set<String> KEYS = Set.of("listeners", "advertised.listeners",
            "listener.security.protocol.map", "inter.broker.listener.name", "security.inter.broker.protocol",
            "super.users", "allow.everyone.if.no.acl.found", "authorizer.class.name", "connections.max.reauth.ms",
            "connection.failed.authentication.delay.ms", "principal.builder.class", "sasl.enabled.mechanisms",
            "sasl.mechanism.inter.broker.protocol", "sasl.server.max.receive.size", "ssl.keystore.type",
            "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.key", "ssl.keystore.certificate.chain",
            "ssl.key.password", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
            "ssl.truststore.certificates", "ssl.client.auth", "ssl.enabled.protocols", "ssl.protocol",
            "ssl.cipher.suites", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
            "ssl.endpoint.identification.algorithm", "ssl.principal.mapping.rules", "raft.security.protocol",
            "max.connections.per.ip",
            "max.connections.per.ip.overrides",
            // SASL/OAUTHBEARER (OAuthBearerSettings)
            "sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.expected.audience",
            "sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.scope.claim.name",
            "sasl.oauthbearer.clock.skew.seconds");

    /** The mechanisms served. */
    static final List<String> MECHANISMS = List.of("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER");

    /** Kafka's authorizer, the one this broker's ACLs stand in for. */
    public static final String STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

    private static final Pattern LISTENER = Pattern.compile("([A-Za-z0-9_]+)://(\\[[^\\]]*\\]|[^:]*):(\\d+)");
    private static final Pattern JAAS_OPTION = Pattern.compile("([A-Za-z_][A-Za-z0-9_.-]*)\\s*=\\s*(?:\"((?:[^\"\\\\]"
            + "|\\\\.)*)\"|([^\\s;\"]+))");

    /**
     * One listener.
     *
     * @param name its name, upper case ("SASL_SSL", "CLIENT")
     * @param protocol its security protocol
     * @param host the address bound
     * @param port the port bound (0: any free one)
     * @param advertisedHost the host clients are told
     * @param advertisedPort the port clients are told (0: the port bound)
     */
    public record Listener(String name, SecurityProtocol protocol, String host, int port, String advertisedHost,
                           int advertisedPort, Settings settings) {

        /** @return this listener as bound to {@code boundPort} (which it advertises unless told another) */
        public Listener withPort(int boundPort) {
            return new Listener(name, protocol, host, boundPort, advertisedHost, advertisedPort, settings);
        }

        /** @return this listener bound to {@code boundHost:boundPort} and advertising them */
        public Listener at(String boundHost, int boundPort) {
            return new Listener(name, protocol, boundHost, boundPort, boundHost, 0, settings);
        }

        /** @return the port clients are told */
        public int advertisedPortOrBound() {
            return advertisedPort != 0 ? advertisedPort : port;
        }

        /** @return true if the listener uses TLS */
        public boolean tls() {
            return protocol == SecurityProtocol.SSL || protocol == SecurityProtocol.SASL_SSL;
        }

        /** @return true if clients authenticate with SASL on it */
        public boolean sasl() {
            return protocol == SecurityProtocol.SASL_PLAINTEXT || protocol == SecurityProtocol.SASL_SSL;
        }

        /** @return the name of its security protocol */
        public String protocolName() {
            return protocol.name;
        }

        /** @return a new TLS engine for each connection, or null on a listener without TLS */
        public Supplier<SSLEngine> engines() {
            if (!tls()) {
                return null;
            }
            SSLContext context = TlsContexts.build(settings::get);
            String clientAuth = protocol == SecurityProtocol.SASL_SSL ? settings.own("ssl.client.auth")
                    : settings.get("ssl.client.auth");
            String auth = clientAuth == null ? "none" : clientAuth.trim().toLowerCase(Locale.ROOT);
            if (!Set.of("none", "requested", "required").contains(auth)) {
                throw new IllegalArgumentException("ssl.client.auth must be required, requested or none, was '"
                        + clientAuth + "'");
            }
            String[] protocols = list(settings.get("ssl.enabled.protocols"), "TLSv1.2,TLSv1.3");
            String[] suites = list(settings.get("ssl.cipher.suites"), "");
            // One engine up front, so that a wrong protocol or suite stops the start, not the first client.
            engine(context, auth, protocols, suites);
            return () -> engine(context, auth, protocols, suites);
        }

        private static SSLEngine engine(SSLContext context, String auth, String[] protocols, String[] suites) {
            SSLEngine engine = context.createSSLEngine();
            engine.setUseClientMode(false);
            SSLParameters parameters = engine.getSSLParameters();
            parameters.setProtocols(protocols);
            if (suites.length > 0) {
                parameters.setCipherSuites(suites);
            }
            if (auth.equals("required")) {
                parameters.setNeedClientAuth(true);
            } else if (auth.equals("requested")) {
                parameters.setWantClientAuth(true);
            }
            engine.setSSLParameters(parameters);
            return engine;
        }

        /** @return the mechanisms enabled on a SASL listener */
        public List<String> mechanisms() {
            String value = settings.get("sasl.enabled.mechanisms");
            if (value == null) {
                throw new IllegalArgumentException("listener " + name + " uses SASL: set sasl.enabled.mechanisms"
                        + " (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER; Kafka's default GSSAPI is not"
                        + " served)");
            }
            List<String> mechanisms = List.of(list(value, ""));
            for (String mechanism : mechanisms) {
                if (!MECHANISMS.contains(mechanism)) {
                    throw new IllegalArgumentException("sasl.enabled.mechanisms: " + mechanism + " is not served;"
                            + " served are " + MECHANISMS);
                }
            }
            if (mechanisms.isEmpty()) {
                throw new IllegalArgumentException("sasl.enabled.mechanisms of listener " + name + " is empty");
            }
            return mechanisms;
        }

        /**
         * @return the users and passwords of the PLAIN mechanism's JAAS configuration on this listener
         *     ({@code listener.name.<listener>.plain.sasl.jaas.config}: {@code user_<name>="<password>"})
         */
        public Map<String, String> plainUsers() {
            String jaas = settings.own("plain.sasl.jaas.config");
            if (jaas == null) {
                throw new IllegalArgumentException("listener " + name + " enables PLAIN: set listener.name."
                        + name.toLowerCase(Locale.ROOT) + ".plain.sasl.jaas.config (PlainLoginModule with"
                        + " user_<name>=\"<password>\" options)");
            }
            if (!jaas.contains("org.apache.kafka.common.security.plain.PlainLoginModule")) {
                throw new IllegalArgumentException("the PLAIN JAAS configuration of listener " + name
                        + " must name org.apache.kafka.common.security.plain.PlainLoginModule");
            }
            Map<String, String> users = new HashMap<>();
            jaasOptions(jaas).forEach((option, value) -> {
                if (option.startsWith("user_")) {
                    users.put(option.substring(5), value);
                }
            });
            return users;
        }

        /** @return the SASL/OAUTHBEARER settings of this listener (which enables it) */
        OAuthBearerSettings oauthBearer() {
            return OAuthBearerSettings.of(this);
        }

        /**
         * @return the largest frame taken before a client has authenticated (sasl.server.max.receive.size, Kafka's
         *     default 512 KiB)
         */
        public int maxUnauthenticatedBytes() {
            String value = settings.get("sasl.server.max.receive.size");
            long bytes = value == null ? 524_288 : parseLong("sasl.server.max.receive.size", value);
            if (bytes < 1 || bytes > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("sasl.server.max.receive.size must be 1 to " + Integer.MAX_VALUE
                        + ", was " + bytes);
            }
            return (int) bytes;
        }

        /**
         * @return connections this listener serves at once ({@code listener.name.<listener>.max.connections}; no cap
         *     of its own when not set), besides the broker's {@code max.connections} over all listeners
         */
        public int maxConnections() {
            String key = "listener.name." + name.toLowerCase(Locale.ROOT) + ".max.connections";
            String value = settings.own("max.connections");
            long count = value == null ? Integer.MAX_VALUE : parseLong(key, value);
            if (count < 0 || count > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(key + " must be 0 to " + Integer.MAX_VALUE + ", was " + count);
            }
            return (int) count;
        }

        /** @return connections.max.reauth.ms for this listener (0: sessions do not expire) */
        public long reauthMillis() {
            String value = settings.get("connections.max.reauth.ms");
            long millis = value == null ? 0 : parseLong("connections.max.reauth.ms", value);
            if (millis < 0) {
                throw new IllegalArgumentException("connections.max.reauth.ms must not be negative, was " + millis);
            }
            return millis;
        }
    }

    /** @return the options of a JAAS configuration line ({@code name="value"} or {@code name=value}), in order */
    static Map<String, String> jaasOptions(String jaas) {
        Map<String, String> options = new LinkedHashMap<>();
        Matcher matcher = JAAS_OPTION.matcher(jaas);
        while (matcher.find()) {
            String value = matcher.group(2) != null ? matcher.group(2).replaceAll("\\\\(.)", "$1")
                    : matcher.group(3);
            options.put(matcher.group(1), value);
        }
        return options;
    }

    /** The settings as a listener sees them: its prefixed keys over the bare ones. */
    public static final class Settings {
        private final Map<String, String> all;
        private final String prefix;

        Settings(Map<String, String> all, String listener) {
            this.all = all;
            this.prefix = "listener.name." + listener.toLowerCase(Locale.ROOT) + ".";
        }

        /** @return the listener's own value of the key, else the broker's, else null */
        public String get(String key) {
            String own = all.get(prefix + key);
            return own != null ? own : all.get(key);
        }

        /** @return the listener's own value of the key (with its prefix only), or null */
        public String own(String key) {
            return all.get(prefix + key);
        }
    }

    private final List<Listener> listeners;
    private final Set<String> superUsers;
    private final boolean allowEveryoneIfNoAclFound;
    private final boolean authorizer;
    private final long failedAuthenticationDelayMillis;
    private int maxConnectionsPerIp = Integer.MAX_VALUE;
    private Map<java.net.InetAddress, Integer> perIpOverrides = Map.of();

    private SecuritySettings(List<Listener> listeners, Set<String> superUsers, boolean allowEveryoneIfNoAclFound,
                             boolean authorizer, long failedAuthenticationDelayMillis) {
        this.listeners = listeners;
        this.superUsers = superUsers;
        this.allowEveryoneIfNoAclFound = allowEveryoneIfNoAclFound;
        this.authorizer = authorizer;
        this.failedAuthenticationDelayMillis = failedAuthenticationDelayMillis;
    }

    /** @return true if the key is one of these settings (a bare key or a listener's) */
    public static boolean isKey(String key) {
        if (KEYS.contains(key) || QuotaSettings.KEYS.contains(key)) {
            return true;
        }
        if (!key.startsWith("listener.name.")) {
            return false;
        }
        String rest = key.substring("listener.name.".length());
        int dot = rest.indexOf('.');
        if (dot <= 0) {
            return false;
        }
        String own = rest.substring(dot + 1);
        if (KEYS.contains(own) && (own.startsWith("ssl.") || own.startsWith("sasl.")
                || own.equals("connections.max.reauth.ms")) || own.equals("max.connections")) {
            return true;
        }
        // <mechanism>.sasl.jaas.config, <mechanism>.connections.max.reauth.ms; for OAUTHBEARER also its server
        // callback handler and its sasl.oauthbearer.* keys
        int mechanismDot = own.indexOf('.');
        if (mechanismDot <= 0) {
            return false;
        }
        String mechanismKey = own.substring(mechanismDot + 1);
        return mechanismKey.equals("sasl.jaas.config") || mechanismKey.equals("connections.max.reauth.ms")
                || own.equals(OAuthBearerSettings.HANDLER_KEY)
                || own.startsWith("oauthbearer.") && OAuthBearerSettings.KEYS.contains(mechanismKey);
    }

    /**
     * @param properties the broker's settings (only the security ones are read)
     * @param host the address of the one PLAINTEXT listener when {@code listeners} is not set
     * @param port its port
     * @throws IllegalArgumentException naming what is wrong
     */
    public static SecuritySettings parse(Map<String, String> properties, String host, int port) {
        Map<String, String> all = new HashMap<>(properties);
        Map<String, SecurityProtocol> protocols = new HashMap<>();
        String map = all.get("listener.security.protocol.map");
        if (map != null) {
            for (String entry : list(map, "")) {
                int colon = entry.indexOf(':');
                if (colon <= 0) {
                    throw new IllegalArgumentException("listener.security.protocol.map: '" + entry
                            + "' is not NAME:PROTOCOL");
                }
                protocols.put(entry.substring(0, colon).toUpperCase(Locale.ROOT),
                        protocol(entry.substring(colon + 1)));
            }
        } else {
            for (SecurityProtocol protocol : List.of(SecurityProtocol.PLAINTEXT, SecurityProtocol.SSL,
                    SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)) {
                protocols.put(protocol.name, protocol);
            }
        }
        String listenersValue = all.getOrDefault("listeners", "PLAINTEXT://" + host + ":" + port);
        Map<String, String[]> advertised = new HashMap<>();
        if (all.get("advertised.listeners") != null) {
            for (String entry : list(all.get("advertised.listeners"), "")) {
                String[] parsed = endpoint("advertised.listeners", entry);
                advertised.put(parsed[0], parsed);
            }
        }
        List<Listener> listeners = new ArrayList<>();
        Set<String> names = new TreeSet<>();
        Set<Integer> ports = new TreeSet<>();
        for (String entry : list(listenersValue, "")) {
            String[] parsed = endpoint("listeners", entry);
            String name = parsed[0];
            SecurityProtocol protocol = protocols.get(name);
            if (protocol == null) {
                throw new IllegalArgumentException("listener " + name + " has no security protocol: name it in"
                        + " listener.security.protocol.map");
            }
            if (!names.add(name)) {
                throw new IllegalArgumentException("listeners: " + name + " is named twice");
            }
            int listenerPort = Integer.parseInt(parsed[2]);
            if (listenerPort != 0 && !ports.add(listenerPort)) {
                throw new IllegalArgumentException("listeners: port " + listenerPort + " is taken twice");
            }
            String[] told = advertised.getOrDefault(name, parsed);
            String bound = parsed[1].isEmpty() ? "0.0.0.0" : parsed[1];
            if (told != parsed && (told[1].isEmpty() || told[1].equals("0.0.0.0"))) {
                throw new IllegalArgumentException("advertised.listeners: " + name + " cannot advertise '"
                        + told[1] + "'");
            }
            listeners.add(new Listener(name, protocol, bound, listenerPort,
                    told == parsed && (bound.equals("0.0.0.0") || bound.equals("::")) ? "127.0.0.1" : told[1],
                    told == parsed ? 0 : Integer.parseInt(told[2]), new Settings(all, name)));
        }
        if (listeners.isEmpty()) {
            throw new IllegalArgumentException("listeners names no listener");
        }
        for (String name : advertised.keySet()) {
            if (!names.contains(name)) {
                throw new IllegalArgumentException("advertised.listeners names " + name + ", which is not in"
                        + " listeners");
            }
        }
        String authorizerClass = all.getOrDefault("authorizer.class.name", "").trim();
        if (!authorizerClass.isEmpty() && !authorizerClass.equals(STANDARD_AUTHORIZER)) {
            throw new IllegalArgumentException("authorizer.class.name must be " + STANDARD_AUTHORIZER
                    + " (ACLs kept by the cluster) or empty, was '" + authorizerClass + "'");
        }
        String principalBuilder = all.get("principal.builder.class");
        if (principalBuilder != null && !principalBuilder.trim().equals(
                "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder")) {
            throw new IllegalArgumentException("principal.builder.class: only Kafka's DefaultKafkaPrincipalBuilder"
                    + " is served");
        }
        String rules = all.get("ssl.principal.mapping.rules");
        if (rules != null && !rules.trim().equals("DEFAULT")) {
            throw new IllegalArgumentException("ssl.principal.mapping.rules: only DEFAULT is served (the"
                    + " certificate's distinguished name is the principal's name)");
        }
        Set<String> superUsers = new TreeSet<>();
        for (String user : all.getOrDefault("super.users", "").split(";")) {
            String trimmed = user.trim();
            if (trimmed.isEmpty()) {
                continue;
            }
            if (trimmed.indexOf(':') <= 0) {
                throw new IllegalArgumentException("super.users: '" + trimmed + "' is not a principal (User:name)");
            }
            superUsers.add(trimmed);
        }
        long delay = parseLong("connection.failed.authentication.delay.ms",
                all.getOrDefault("connection.failed.authentication.delay.ms", "100"));
        SecuritySettings settings = new SecuritySettings(List.copyOf(listeners), Set.copyOf(superUsers),
                bool("allow.everyone.if.no.acl.found", all.getOrDefault("allow.everyone.if.no.acl.found", "false")),
                !authorizerClass.isEmpty(), Math.max(0, delay));
        settings.maxConnectionsPerIp = (int) parseLong("max.connections.per.ip",
                all.getOrDefault("max.connections.per.ip", String.valueOf(Integer.MAX_VALUE)));
        if (settings.maxConnectionsPerIp < 0) {
            throw new IllegalArgumentException("max.connections.per.ip must not be negative");
        }
        Map<java.net.InetAddress, Integer> overrides = new HashMap<>();
        for (String entry : list(all.get("max.connections.per.ip.overrides"), "")) {
            int colon = entry.lastIndexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException("max.connections.per.ip.overrides: '" + entry
                        + "' is not host:count");
            }
            try {
                overrides.put(java.net.InetAddress.getByName(entry.substring(0, colon)),
                        (int) parseLong("max.connections.per.ip.overrides", entry.substring(colon + 1)));
            } catch (java.net.UnknownHostException e) {
                throw new IllegalArgumentException("max.connections.per.ip.overrides: unknown host in '" + entry
                        + "'");
            }
        }
        settings.perIpOverrides = Map.copyOf(overrides);
        // Checked now, so that a wrong setting stops the start rather than the first client.
        for (Listener listener : listeners) {
            listener.reauthMillis();
            listener.maxConnections();
            if (listener.sasl()) {
                listener.maxUnauthenticatedBytes();
                if (listener.mechanisms().contains("PLAIN")) {
                    listener.plainUsers();
                }
                if (listener.mechanisms().contains(OAuthBearerServer.MECHANISM)) {
                    listener.oauthBearer();
                }
            }
            if (listener.tls()) {
                listener.engines();
            }
        }
        return settings;
    }

    private static String[] endpoint(String key, String entry) {
        Matcher matcher = LISTENER.matcher(entry.trim());
        if (!matcher.matches()) {
            throw new IllegalArgumentException(key + ": '" + entry + "' is not NAME://host:port");
        }
        String host = matcher.group(2);
        if (host.startsWith("[")) {
            host = host.substring(1, host.length() - 1);
        }
        int port = Integer.parseInt(matcher.group(3));
        if (port > 65_535) {
            throw new IllegalArgumentException(key + ": port " + port + " is out of range");
        }
        return new String[] {matcher.group(1).toUpperCase(Locale.ROOT), host, matcher.group(3)};
    }

    private static SecurityProtocol protocol(String name) {
        try {
            return SecurityProtocol.forName(name.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("'" + name + "' is not a security protocol (PLAINTEXT, SSL,"
                    + " SASL_PLAINTEXT, SASL_SSL)");
        }
    }

    static String[] list(String value, String otherwise) {
        String text = value == null ? otherwise : value;
        return Arrays.stream(text.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toArray(String[]::new);
    }

    private static long parseLong(String key, String value) {
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a whole number, was '" + value + "'");
        }
    }

    private static boolean bool(String key, String value) {
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException(key + " must be true or false, was '" + value + "'");
        };
    }

    /**
     * @param properties the broker's settings
     * @return the key and trust stores of a cluster's Raft ports when {@code raft.security.protocol} is SSL (the
     *     settings of listener {@code RAFT}: {@code listener.name.raft.ssl.*} over {@code ssl.*}), or null for
     *     PLAINTEXT (the default)
     */
    public static TlsContexts.KeyMaterial raftTls(Map<String, String> properties) {
        String protocol = properties.getOrDefault("raft.security.protocol", "PLAINTEXT").trim();
        return switch (protocol.toUpperCase(Locale.ROOT)) {
            case "PLAINTEXT" -> null;
            case "SSL" -> TlsContexts.keyMaterial(new Settings(properties, "RAFT")::get);
            default -> throw new IllegalArgumentException("raft.security.protocol must be PLAINTEXT or SSL, was '"
                    + protocol + "'");
        };
    }

    /** @return max.connections.per.ip (Kafka's default: no cap) */
    public int maxConnectionsPerIp() {
        return maxConnectionsPerIp;
    }

    /** @return max.connections.per.ip.overrides: {@code host:count} pairs, by address */
    public Map<java.net.InetAddress, Integer> perIpOverrides() {
        return perIpOverrides;
    }

    /** @return the listeners, in the order {@code listeners} names them */
    public List<Listener> listeners() {
        return listeners;
    }

    /** @return the principals allowed everything ({@code super.users}) */
    public Set<String> superUsers() {
        return superUsers;
    }

    /** @return allow.everyone.if.no.acl.found */
    public boolean allowEveryoneIfNoAclFound() {
        return allowEveryoneIfNoAclFound;
    }

    /** @return true if ACLs are checked (authorizer.class.name is set) */
    public boolean authorizer() {
        return authorizer;
    }

    /** @return how long a refused authentication's answer is held back (connection.failed.authentication.delay.ms) */
    public long failedAuthenticationDelayMillis() {
        return failedAuthenticationDelayMillis;
    }

    /** @return the listeners by name */
    public Map<String, Listener> byName() {
        Map<String, Listener> byName = new LinkedHashMap<>();
        listeners.forEach(listener -> byName.put(listener.name(), listener));
        return byName;
    }
}
