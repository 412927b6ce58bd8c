// The JDBC client of TestSystemCatalogsJDBC: DatabaseMetaData as DBeaver
// and most Java BI tools call it, a prepared statement with a fetch size,
// CopyManager.copyOut, and an error's SQLSTATE and position.
import java.io.StringWriter;
import java.sql.*;
import org.postgresql.PGConnection;
import org.postgresql.util.PSQLException;
public class Main {
  public static void main(String[] a) throws Exception {
    Connection c = DriverManager.getConnection(a[0]);
    DatabaseMetaData md = c.getMetaData();
    System.out.println("product " + md.getDatabaseProductName() + " " + md.getDatabaseProductVersion());
    try (ResultSet r = md.getSchemas()) { while (r.next()) System.out.println("schema " + r.getString(1)); } catch (Exception e) { System.out.println("getSchemas FAIL " + e.getMessage().split("\n")[0]); }
    try (ResultSet r = md.getTables(null, null, "%", new String[]{"TABLE"})) { while (r.next()) System.out.println("table " + r.getString(2) + "." + r.getString(3)); } catch (Exception e) { System.out.println("getTables FAIL " + e.getMessage().split("\n")[0]); }
    try (ResultSet r = md.getColumns(null, "main", "t", "%")) { int n=0; while (r.next()) { if (n++<3) System.out.println("column " + r.getString(4) + " " + r.getString(6) + " " + r.getInt(5)); } System.out.println("columns " + n); } catch (Exception e) { System.out.println("getColumns FAIL " + e.getMessage().split("\n")[0]); }
    try (ResultSet r = md.getPrimaryKeys(null, "main", "t")) { int n=0; while (r.next()) n++; System.out.println("pks " + n); } catch (Exception e) { System.out.println("getPrimaryKeys FAIL " + e.getMessage().split("\n")[0]); }
    c.setAutoCommit(false);
    try (PreparedStatement p = c.prepareStatement("SELECT id FROM t WHERE id < ?")) { p.setFetchSize(10); p.setLong(1, 25); ResultSet r = p.executeQuery(); int n=0; while (r.next()) n++; System.out.println("prepared rows " + n); } catch (Exception e) { System.out.println("prepared FAIL " + e.getMessage().split("\n")[0]); }
    c.setAutoCommit(true);
    try { StringWriter w = new StringWriter(); long n = c.unwrap(PGConnection.class).getCopyAPI().copyOut("COPY (SELECT id, name FROM t WHERE id < 3 ORDER BY id) TO STDOUT (FORMAT csv)", w); System.out.println("copyOut " + n + " " + w.toString().replace("\n", "|")); } catch (Exception e) { System.out.println("copyOut FAIL " + e.getMessage().split("\n")[0]); }
    try (Statement s = c.createStatement()) { s.executeQuery("SELECT id FROM t WHERE id = 'abc'"); System.out.println("error none"); } catch (PSQLException e) { System.out.println("error " + e.getSQLState() + " " + e.getServerErrorMessage().getPosition()); }
    c.close();
  }
}
