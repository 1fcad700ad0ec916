package dev.pgtask.docs;

import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import javax.sql.DataSource;

/** The docs examples' test database: one per JVM, migrated, with the examples' tables. */
final class TestDataSources {

  private static DataSource dataSource;

  private TestDataSources() {}

  static synchronized DataSource migrated() {
    if (dataSource == null) {
      TestDatabase db = TestDatabase.create("docs_examples");
      Runtime.getRuntime().addShutdownHook(new Thread(db::close));
      try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
        st.execute("CREATE TABLE invoice_mail (invoice_id bigint)");
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      dataSource = db.pool(8);
    }
    return dataSource;
  }
}
