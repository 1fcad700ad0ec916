package dev.pgtask.internal;

import java.net.InetAddress;

/** This machine's name as workers record it. */
public final class Hosts {

  private Hosts() {}

  /** The local host name, cut to 24 characters ({@code application_name} has 63 bytes for everything). */
  public static String shortHostName() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      host = "unknown";
    }
    return host.length() > 24 ? host.substring(0, 24) : host;
  }
}
