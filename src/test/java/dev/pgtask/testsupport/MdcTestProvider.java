package dev.pgtask.testsupport;

import org.slf4j.ILoggerFactory;
import org.slf4j.IMarkerFactory;
import org.slf4j.helpers.BasicMDCAdapter;
import org.slf4j.helpers.BasicMarkerFactory;
import org.slf4j.helpers.NOPLoggerFactory;
import org.slf4j.spi.MDCAdapter;
import org.slf4j.spi.SLF4JServiceProvider;

/**
 * An SLF4J provider with a working MDC (slf4j-simple, the suite's binding, ignores the MDC), for
 * tests that load pgtask in a class loader of their own with {@code -Dslf4j.provider} naming this.
 */
public final class MdcTestProvider implements SLF4JServiceProvider {

  private final MDCAdapter mdc = new BasicMDCAdapter();
  private final IMarkerFactory markers = new BasicMarkerFactory();
  private final ILoggerFactory loggers = new NOPLoggerFactory();

  @Override
  public ILoggerFactory getLoggerFactory() {
    return loggers;
  }

  @Override
  public IMarkerFactory getMarkerFactory() {
    return markers;
  }

  @Override
  public MDCAdapter getMDCAdapter() {
    return mdc;
  }

  @Override
  public String getRequestedApiVersion() {
    return "2.0.99";
  }

  @Override
  public void initialize() {}
}
